/**
 * The studio's views in chromium, against a real Redis, a `queueflow worker` process and a
 * RedisEngine: a run appears in the list live; its page draws the graph with the current node
 * and shows each step's diff; a parked ask is answered from the mailboxes form and the run
 * completes; a fan-out shows its children, progress, failures and merge conflicts; the workers.
 * Each view's screenshot goes to __screenshots__/.
 */
import { nanoid } from 'nanoid';
import { waitFor } from '../support/wait-for.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fan, markup, MARKUP, review, type ReviewShared } from './studio-flows.js';
import { accessibilityProblems, startStudio, type StudioSetup } from './support/studio-harness.js';

let s: StudioSetup;
beforeAll(async () => {
  s = await startStudio('studio-views');
}, 60_000);
afterAll(() => s?.close());

it('a run appears in the list live, its page draws the graph with the current node and each step diff, and answering its ask from the mailboxes form completes it', async () => {
  const { page } = s;
  await page.goto(`${s.url}/`);
  await page.getByTestId('live-state').filter({ hasText: 'live' }).waitFor();

  const desk = `desk.${nanoid(6)}`;
  const handle = await s.engine.start<ReviewShared>(review, { title: 'Queues' }, { params: { desk } });
  // Live: the row comes in and turns `waiting` (parked on the ask) with no reload.
  const row = page.locator(`tr[data-run-id="${handle.id}"]`);
  await row.filter({ hasText: 'waiting' }).waitFor();
  await row.filter({ hasText: 'approve' }).waitFor();
  await page.getByTestId('count-waiting').filter({ hasText: '1' }).waitFor();
  await s.shot('runs');
  expect(await accessibilityProblems(page)).toEqual([]);

  await row.getByRole('link').click();
  await page.waitForURL(`**/runs/${handle.id}`);
  await page.getByTestId('graph-current').filter({ hasText: 'approve' }).waitFor();
  // Mermaid drew the node with the `current` class (and the visited ones with theirs).
  await page.locator('[data-testid="flow-graph"] g.node.current').filter({ hasText: 'approve' }).waitFor();
  await page.locator('[data-testid="flow-graph"] g.node.visited').filter({ hasText: 'enrich' }).waitFor();
  await page.getByTestId('graph-visited').filter({ hasText: 'draft, enrich' }).waitFor();

  await page.getByRole('button', { name: '#1', exact: true }).click();
  await page.waitForURL(/step=1/);
  const diff = page.getByTestId('step-diff');
  await diff.filter({ hasText: 'enriched with sources' }).waitFor();
  expect(await diff.locator('.jsondiffpatch-added').count()).toBeGreaterThan(0); // `tags` came in
  await s.shot('run');
  expect(await accessibilityProblems(page)).toEqual([]);

  await page.getByRole('link', { name: 'Mailboxes' }).click();
  const question = page.locator('.question').filter({ hasText: 'Publish \\"Queues\\"?' });
  await question.filter({ hasText: handle.id }).waitFor(); // the asking run is named by the question
  await s.shot('mailboxes');
  expect(await accessibilityProblems(page)).toEqual([]);
  await question.getByLabel(/^Answer/).fill('not json');
  await question.getByRole('button', { name: 'Send answer' }).click();
  await question.getByRole('alert').filter({ hasText: 'not JSON' }).waitFor();
  await question.getByLabel(/^Answer/).fill('"yes"');
  await question.getByRole('button', { name: 'Send answer' }).click();

  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.shared).toMatchObject({ approval: 'yes', published: true });
  await page.goto(`${s.url}/runs/${handle.id}`);
  await page.locator('#run-title .badge').filter({ hasText: 'completed' }).waitFor();
  await page.getByTestId('graph-visited').filter({ hasText: 'publish' }).waitFor();
  expect(s.pageErrors).toEqual([]);
});

it('a fan-out shows its children grid with progress and a failed child, then its merge conflicts', async () => {
  const { page } = s;
  const gate = `gate.${nanoid(6)}`;
  const handle = await s.engine.start<{ n: number; failed?: number }>(
    fan,
    { n: 12 },
    { params: { gate, gateFrom: 8, failIndex: 3 } },
  );
  // The grid refreshes as the parent changes (children's own changes are not announced): open the
  // page once the four gated children wait on their gates.
  await waitFor('children 8 to 11 to wait on their gates', async () => {
    const children = await s.engine.children(handle.id);
    return children.filter((child) => child.status === 'waiting').length === 4;
  });
  await page.goto(`${s.url}/runs/${handle.id}`);
  await page.getByTestId('fan-out-progress').filter({ hasText: '8 of 12 children ended' }).waitFor();
  const grid = page.getByTestId('children-grid');
  await grid.locator('tbody tr').nth(11).waitFor();
  await grid.locator('tr.row-failed').filter({ hasText: 'refuses to square' }).waitFor();
  expect(await grid.locator('tr.row-waiting').count()).toBe(4);
  await page.getByTestId('graph-current').filter({ hasText: 'each-number' }).waitFor();
  await page.getByTestId('step-diff-empty').waitFor(); // the fan-out step changed nothing yet
  // Counts per status, and a filter: only the waiting children, then only the failed one.
  await page.getByTestId('child-count-completed').filter({ hasText: /^7$/ }).waitFor();
  await page.getByTestId('child-count-waiting').filter({ hasText: /^4$/ }).waitFor();
  await page.getByTestId('child-count-failed').filter({ hasText: /^1$/ }).waitFor();
  await s.shot('run-fan-out');
  expect(await accessibilityProblems(page)).toEqual([]);
  const filters = page.getByRole('group', { name: 'Filter children by status' });
  await filters.getByRole('button', { name: /^waiting/ }).click();
  await expect.poll(() => grid.locator('tbody tr').count()).toBe(4);
  expect(await grid.locator('tbody tr.row-waiting').count()).toBe(4);
  await filters.getByRole('button', { name: /^failed/ }).click();
  await expect.poll(() => grid.locator('tbody tr').count()).toBe(1);
  await grid.locator('tr.row-failed').filter({ hasText: 'refuses to square' }).waitFor();
  await filters.getByRole('button', { name: /^all/ }).click();
  await expect.poll(() => grid.locator('tbody tr').count()).toBe(12);

  for (let i = 8; i < 12; i++) await s.engine.send(`${gate}.${i}`, 'go');
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.shared.failed).toBe(1);
  // Live: the page turns completed and lists the path every child wrote.
  await page.locator('#run-title .badge').filter({ hasText: 'completed' }).waitFor();
  await page.getByRole('table', { name: 'Merge conflicts' }).filter({ hasText: '/last' }).waitFor();
  await s.shot('run-fan-out-merged');
  expect(s.pageErrors).toEqual([]);
});

it('node and action names holding HTML are text on every view, the graph included: nothing is parsed as markup', async () => {
  const { page } = s;
  const handle = await s.engine.start(markup, {});
  expect((await handle.result()).status).toBe('completed');
  // What the page's CSP blocks (an inline handler from a name parsed as markup) is a violation event.
  await page.addInitScript({
    content: `globalThis.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) => cspViolations.push(event.violatedDirective));`,
  });
  await page.goto(`${s.url}/`);
  await page.locator(`tr[data-run-id="${handle.id}"]`).getByRole('link').click();
  await page.waitForURL(`**/runs/${handle.id}`);
  const graph = page.getByTestId('flow-graph');
  await graph.locator('g.node').filter({ hasText: MARKUP.first }).waitFor();
  await graph.locator('g.node').filter({ hasText: MARKUP.second }).waitFor();
  await graph.locator('g.edgeLabel').filter({ hasText: MARKUP.action }).waitFor();
  await page
    .getByTestId('graph-visited')
    .filter({ hasText: `${MARKUP.first}, ${MARKUP.second}` })
    .waitFor();
  await page.getByRole('button', { name: '#1', exact: true }).click();
  await page.getByTestId('step-diff').filter({ hasText: MARKUP.second }).waitFor();
  // Nothing of the names became an element, anywhere on the page.
  expect(await page.locator('#app img, #app script, [onerror], [onmouseover]').count()).toBe(0);
  expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
  await s.shot('run-markup');
  expect(s.pageErrors).toEqual([]);
});

it('the workers view shows the live worker, its concurrency and its flows', async () => {
  const { page } = s;
  await page.goto(`${s.url}/workers`);
  const table = page.getByTestId('workers-table');
  await table.filter({ hasText: String(s.workers[0]!.pid) }).waitFor();
  await table.filter({ hasText: 'st-review' }).waitFor();
  expect(await table.locator('tbody tr').count()).toBe(1);
  await s.shot('workers');
  expect(await accessibilityProblems(page)).toEqual([]);
  expect(s.pageErrors).toEqual([]);
});
