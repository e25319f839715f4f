/**
 * The studio's actions in chromium, against a real Redis, a `queueflow worker` process and a
 * RedisEngine: cancel a parked run and retry it; retry a failed run once its cause is fixed;
 * fork a run from a step with an edited `shared`. Each asks for a confirmation first.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { untilRun } from '../support/wait-for.js';
import { gate, review, sum, type ReviewShared } from './studio-flows.js';
import { accessibilityProblems, startStudio, type StudioSetup } from './support/studio-harness.js';

let s: StudioSetup;
beforeAll(async () => {
  s = await startStudio('studio-actions');
}, 60_000);
afterAll(() => s?.close());

const badge = () => s.page.locator('#run-title .badge');

it('cancels a parked run after a confirmation, then retries it: it parks again and completes once answered', async () => {
  const { page } = s;
  const desk = `desk.${nanoid(6)}`;
  const handle = await s.engine.start<ReviewShared>(review, { title: 'To cancel' }, { params: { desk } });
  await untilRun(s.engine, handle.id, 'parked on its ask', (info) => info.status === 'waiting');
  await page.goto(`${s.url}/runs/${handle.id}`);
  await badge().filter({ hasText: 'waiting' }).waitFor();

  await page.getByRole('button', { name: 'Cancel run' }).click();
  const confirm = page.getByRole('dialog', { name: 'Cancel this run?' });
  await confirm.waitFor();
  await confirm.getByRole('button', { name: 'Cancel', exact: true }).click(); // changed my mind
  await confirm.waitFor({ state: 'hidden' });
  expect((await s.engine.get(handle.id))!.status).toBe('waiting');

  await page.getByRole('button', { name: 'Cancel run' }).click();
  await confirm.getByRole('button', { name: 'Cancel the run' }).click();
  await badge().filter({ hasText: 'cancelled' }).waitFor();
  expect((await s.engine.get(handle.id))!.status).toBe('cancelled');
  await s.shot('run-cancelled');

  await page.getByRole('button', { name: 'Retry' }).click();
  await page.getByRole('dialog', { name: 'Retry this run?' }).getByRole('button', { name: 'Retry' }).click();
  await badge().filter({ hasText: 'waiting' }).waitFor(); // back on its ask, under the same id
  const [question] = (await s.engine.mailboxes()).find((box) => box.address === desk)!.messages;
  await s.engine.answer(desk, question!.id, 'yes');
  await badge().filter({ hasText: 'completed' }).waitFor();
  const info = (await s.engine.get(handle.id))!;
  expect(info).toMatchObject({ status: 'completed', retries: 1, shared: { published: true } });
  expect(s.pageErrors).toEqual([]);
});

it('shows a failed run with its error and stack on the failed node; retry completes it once the cause is gone', async () => {
  const { page } = s;
  const gateFile = join(mkdtempSync(join(tmpdir(), 'qf-studio-gate-')), 'open');
  const handle = await s.engine.start(gate, {}, { params: { gateFile } });
  expect((await handle.result()).status).toBe('failed');
  await page.goto(`${s.url}/runs/${handle.id}`);
  await badge().filter({ hasText: 'failed' }).waitFor();
  await page.getByTestId('run-error').filter({ hasText: 'the gate is closed' }).waitFor();
  await page.getByTestId('graph-failed').filter({ hasText: 'check' }).waitFor();
  await page.locator('[data-testid="flow-graph"] g.node.failed').filter({ hasText: 'check' }).waitFor();
  await page.getByText('Stack').first().click();
  await page.locator('pre.stack').filter({ hasText: 'the gate is closed' }).waitFor();
  expect(await page.getByRole('button', { name: 'Cancel run' }).isDisabled()).toBe(true);
  await s.shot('run-failed');
  expect(await accessibilityProblems(page)).toEqual([]);

  writeFileSync(gateFile, 'open');
  await page.getByRole('button', { name: 'Retry' }).click();
  await page.getByRole('dialog', { name: 'Retry this run?' }).getByRole('button', { name: 'Retry' }).click();
  await badge().filter({ hasText: 'completed' }).waitFor();
  expect((await s.engine.get(handle.id))!.shared).toMatchObject({ gate: 'open', done: true });
  expect(s.pageErrors).toEqual([]);
});

it('forks a run from a step with an edited shared: the new run starts there and the page opens it', async () => {
  const { page } = s;
  const source = await s.engine.run(sum, { numbers: [1, 2, 3] });
  expect(source.shared).toMatchObject({ doubled: [2, 4, 6], total: 12 });
  await page.goto(`${s.url}/runs/${source.id}`);
  await badge().filter({ hasText: 'completed' }).waitFor();

  await page.getByRole('button', { name: 'Fork…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Fork this run' });
  await dialog.getByLabel('From step').selectOption('1');
  const editor = dialog.locator('.cm-content');
  await editor.filter({ hasText: '"doubled"' }).waitFor(); // shared just before step #1, in the JSON editor
  await editor.click();
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.insertText('{ "numbers": [1, 2, 3], "doubled": [10, 20] }');
  await dialog.getByTestId('fork-changes').filter({ hasText: '/doubled' }).waitFor(); // the editor took it
  await s.shot('fork-dialog');
  expect(await accessibilityProblems(page)).toEqual([]);
  await dialog.getByRole('button', { name: 'Start the fork' }).click();

  await page.waitForURL((url) => url.pathname.startsWith('/runs/') && !url.pathname.endsWith(source.id));
  const forkId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!);
  // The fork runs its steps now. Its end is awaited in the store first (on CI's busiest pass, a
  // CPU burner beside parallel test files, that can take long); then the page must show it within
  // its default timeout: a page still on an older status then missed a live update.
  const ended = await untilRun(s.engine, forkId, 'the fork to end', (info) => info.finishedAt !== undefined);
  expect(ended.status).toBe('completed');
  await badge().filter({ hasText: 'completed' }).waitFor();
  await page.locator('.run-head').getByRole('link', { name: source.id }).waitFor(); // "forked from <source> at step #1"
  // The run's events start with where it was forked from.
  await page
    .getByTestId('run-events')
    .locator('li[data-event="forked"]')
    .filter({ hasText: `forked from ${source.id} at step #1` })
    .waitFor();
  const fork = (await s.engine.get(forkId))!;
  expect(fork.forkedFrom).toEqual({ runId: source.id, step: 1 });
  expect(fork.shared).toMatchObject({ doubled: [10, 20], total: 30 });
  await s.shot('run-forked');
  expect(s.pageErrors).toEqual([]);
});
