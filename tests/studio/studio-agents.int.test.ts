/**
 * The studio's Agents page in chromium (issue 25), against a real Redis and a `queueflow worker`
 * process: the agents listed by type, an agent's state, turns with their diffs and dead letters,
 * its reminders and a turn's conversation, a redelivery from the page, and the links from a
 * turn's run and from the agent's mailbox.
 */
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tally } from './studio-flows.js';
import { accessibilityProblems, startStudio, type StudioSetup } from './support/studio-harness.js';

let s: StudioSetup;
beforeAll(async () => {
  s = await startStudio('studio-agents');
}, 60_000);
afterAll(() => s?.close());

it("lists agents, shows one's state, turns and dead letters, and redelivers a dead letter", async () => {
  const { page, engine } = s;
  const key = `k-${nanoid(6)}`;
  const ref = tally.ref(key);
  await engine.send(ref, { add: 2 }, { conversation: { id: `conv-${key}` } });
  const poison = await engine.send(ref, { fail: true });
  await engine.send(ref, { add: 3, remindInMs: 3_600_000 });
  await expect.poll(async () => (await engine.agent(ref))?.turns, { timeout: 20_000 }).toBe(2);

  await page.goto(`${s.url}/`);
  await page.getByRole('link', { name: 'Agents' }).click();
  await page.waitForURL('**/agents');
  await page.getByTestId('agent-type').fill('st-tally');
  await page.getByRole('link', { name: ref }).click();
  await page.getByTestId('agent-turns').filter({ hasText: /^2$/ }).waitFor();
  await page.getByTestId('agent-inbox').filter({ hasText: 'of 100' }).waitFor(); // its type's capacity
  await page.getByRole('tree').or(page.getByLabel("The agent's state")).first().waitFor();
  await page.getByTestId('turn-1').filter({ hasText: 'completed' }).filter({ hasText: '"/total"' }).waitFor();
  await page.getByTestId('turn-2').filter({ hasText: 'failed' }).waitFor();
  await page
    .getByTestId('turn-1')
    .getByTestId('turn-conversation')
    .filter({ hasText: `conv-${key}` })
    .waitFor();
  await page.getByTestId('agent-reminders').filter({ hasText: 'recount' }).waitFor();
  const letters = page.getByTestId('dead-letters');
  await letters.filter({ hasText: poison }).filter({ hasText: 'this message fails its turn' }).waitFor();
  await s.shot('agent');
  expect(await accessibilityProblems(page)).toEqual([]);

  // Redelivered, the message fails its turn again: a fourth turn, and the dead letter is back.
  await page.getByTestId(`redeliver-${poison}`).click();
  await page.locator('dialog[open]').getByRole('button', { name: 'Redeliver', exact: true }).click();
  await page.getByTestId('turn-4').filter({ hasText: 'failed' }).waitFor();

  // A turn's run links to its agent.
  const turnRun = (await engine.agentHistory(ref))[0]!.runId;
  await page.goto(`${s.url}/runs/${turnRun}`);
  await page.getByTestId('run-agent').click();
  await page.waitForURL(`**/agents/${encodeURIComponent(ref)}`);
  expect(s.pageErrors).toEqual([]);
});
