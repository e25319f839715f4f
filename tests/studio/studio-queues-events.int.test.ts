/**
 * The studio's Queues page and a run's event timeline in chromium (issue 31), against a real
 * Redis and a `queueflow worker` process: per queue its tasks waiting, delayed, throttled and
 * running and the workers serving it, per budget key its use against its limit; a run's events
 * (created, started, a failed try retried, steps committed, parked on a mailbox and woken by a
 * message, from the run's event log; cancelled, and by whom).
 */
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { elsewhere, flaky, metered, wait } from './studio-flows.js';
import { accessibilityProblems, startStudio, type StudioSetup } from './support/studio-harness.js';
import { waitFor } from '../support/wait-for.js';

let s: StudioSetup;
beforeAll(async () => {
  s = await startStudio('studio-queues');
}, 60_000);
afterAll(() => s?.close());

it('the Queues page shows each queue by state with its workers, and each budget against its limit', async () => {
  const { page } = s;
  const fanOut = await s.engine.start(metered, {});
  const far = await s.engine.start(elsewhere, {});
  try {
    await page.goto(`${s.url}/`);
    await page.getByRole('link', { name: 'Queues' }).click();
    await page.waitForURL('**/queues');
    // The default queue: served by the one worker; two children wait for the budget there.
    const main = page.locator('tr[data-queue="default"]');
    await main.getByTestId('throttled').filter({ hasText: /^2$/ }).waitFor();
    await main.getByTestId('workers').filter({ hasText: '1 worker' }).waitFor();
    // A queue no worker serves: its step waits, and the page says how to serve it.
    const nobody = page.locator('tr[data-queue="st-nobody"]');
    await nobody.getByTestId('waiting').filter({ hasText: /^1$/ }).waitFor();
    await nobody.getByTestId('workers').filter({ hasText: 'queueflow worker --queues st-nobody' }).waitFor();
    // The budget: one unit of one taken, two visits waiting.
    const budget = page.locator('tr[data-budget="st-metered"]');
    await budget.getByTestId('rate').filter({ hasText: '1 / 1 per' }).waitFor();
    await budget.getByTestId('budget-waiting').filter({ hasText: /^2$/ }).waitFor();
    await s.shot('queues');
    expect(await accessibilityProblems(page)).toEqual([]);
  } finally {
    await Promise.all([s.engine.cancel(fanOut.id), s.engine.cancel(far.id)]);
  }
  expect(s.pageErrors).toEqual([]);
});

it("a run's events: created, started, a failed try retried, its steps, parked and woken, cancelled, ended", async () => {
  const { page } = s;
  const done = await s.engine.run(flaky, {});
  expect(done.status).toBe('completed');
  await page.goto(`${s.url}/runs/${done.id}`);
  const events = page.getByTestId('run-events');
  await events.locator('li[data-event="completed"]').waitFor();
  const kinds = await events.locator('li').evaluateAll((items) => items.map((li) => li.getAttribute('data-event')));
  expect(kinds).toEqual(['created', 'started', 'retried', 'step', 'step', 'completed']);
  await events
    .locator('li[data-event="retried"]')
    .filter({ hasText: 'try 1 of flaky failed, retried: first try fails' })
    .waitFor();
  await events
    .locator('li[data-event="step"]')
    .first()
    .filter({ hasText: 'step #0 flaky committed after 2 tries' })
    .waitFor();
  await s.shot('run-events');
  expect(await accessibilityProblems(page)).toEqual([]);

  // Parked, then woken by a message: its event log names the mailbox and the message.
  const inbox = `inbox.${nanoid(6)}`;
  const woken = await s.engine.start(wait, {}, { params: { address: inbox } });
  await waitFor('the run to park', async () => (await s.engine.get(woken.id))?.status === 'waiting');
  const messageId = await s.engine.send(inbox, 'wake up');
  expect((await woken.result({ timeoutMs: 20_000 })).status).toBe('completed');
  await page.goto(`${s.url}/runs/${woken.id}`);
  await events.locator('li[data-event="completed"]').waitFor();
  await events
    .locator('li[data-event="parked"]')
    .filter({ hasText: `step #0 parked on mailbox ${inbox}, no timeout` })
    .waitFor();
  await events
    .locator('li[data-event="woken"]')
    .filter({ hasText: `step #0 woken by message ${messageId} on ${inbox}` })
    .waitFor();
  expect(await events.locator('li').evaluateAll((items) => items.map((li) => li.getAttribute('data-event')))).toEqual([
    'created',
    'started',
    'parked',
    'woken',
    'step',
    'completed',
  ]);

  // A parked run names its mailbox; cancelled, it says so, and by whom.
  const address = `inbox.${nanoid(6)}`;
  const parked = await s.engine.start(wait, {}, { params: { address } });
  await page.goto(`${s.url}/runs/${parked.id}`);
  await events
    .locator('li[data-event="parked"]')
    .filter({ hasText: `parked on mailbox ${address}, no timeout` })
    .waitFor();
  // The Cancel action applies here; it did not on the completed run.
  await page.getByRole('button', { name: 'Cancel run' }).click();
  await page.getByRole('button', { name: 'Cancel the run' }).click();
  await events.locator('li[data-event="cancelled"]').filter({ hasText: 'by studio' }).waitFor();
  await expect.poll(() => page.getByRole('button', { name: 'Cancel run' }).isDisabled()).toBe(true);
  expect(s.pageErrors).toEqual([]);
});
