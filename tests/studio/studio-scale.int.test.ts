/**
 * The studio mounted on a LocalEngine (`createStudioHandler({ engine })`, as the document pipeline
 * does embedded), at scale, in chromium: the runs page with 10,000 runs, and a run with a
 * 2,000-child fan-out. The times are logged (they vary with the machine: no bound is asserted);
 * what is asserted is that each page shows the right numbers.
 */
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LocalEngine, setWarningHandler } from '@queueflow/runtime';
import { fan, studioFlows, sum, wait } from './studio-flows.js';
import { launchBrowser, type Browser } from './support/browser.js';
import { waitFor } from '../support/wait-for.js';
import { openPage, serveStudio } from './support/studio-harness.js';

const RUNS = 10_000;
const PARKED = 100;

let engine: LocalEngine;
let studio: Awaited<ReturnType<typeof serveStudio>>;
let browser: Browser;

beforeAll(async () => {
  setWarningHandler(() => {});
  engine = new LocalEngine({ flows: studioFlows, retainFinishedRuns: 2 * RUNS + 5000 });
  const started = performance.now();
  const address = `scale.${nanoid(6)}`;
  for (let i = 0; i < PARKED; i++) await engine.start(wait, {}, { params: { address } });
  for (let batch = 0; batch < RUNS - PARKED; batch += 500) {
    const count = Math.min(500, RUNS - PARKED - batch);
    await Promise.all(Array.from({ length: count }, (_, i) => engine.run(sum, { numbers: [batch + i, 1] })));
  }
  console.log(`studio scale: ${RUNS} runs made on a LocalEngine in ${Math.round(performance.now() - started)} ms`);
  studio = await serveStudio(engine);
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await studio?.close();
  await engine?.close();
  setWarningHandler(null);
});

it(`renders the runs page with ${RUNS.toLocaleString('en')} runs (times logged)`, async () => {
  const { page, pageErrors, shot } = await openPage(browser);
  const table = page.getByTestId('runs-table');

  const started = performance.now();
  await page.goto(`${studio.url}/`);
  await table.locator('tbody tr').nth(49).waitFor();
  await page.getByTestId('count-all').filter({ hasText: '10,000' }).waitFor();
  const firstRender = performance.now() - started;

  let mark = performance.now();
  await page.getByRole('button', { name: 'Last' }).click();
  await page.locator('.pager-position').filter({ hasText: '9,951–10,000 of 10,000 runs' }).waitFor();
  const lastPage = performance.now() - mark;

  mark = performance.now();
  await page.getByRole('button', { name: /^waiting/ }).click();
  await page
    .locator('.pager-position')
    .filter({ hasText: `1–50 of ${PARKED} runs` })
    .waitFor();
  const filtered = performance.now() - mark;
  expect(await table.locator('tbody tr').filter({ hasText: 'waiting' }).count()).toBe(50);
  expect(await page.getByTestId('count-completed').textContent()).toBe((RUNS - PARKED).toLocaleString('en'));

  console.log(
    `studio scale: runs page with ${RUNS} runs: first render (page load to 50 rows and counts) ${Math.round(firstRender)} ms; ` +
      `last page ${Math.round(lastPage)} ms; status filter ${Math.round(filtered)} ms`,
  );
  await shot('runs-10000');
  await page.close();
  expect(pageErrors).toEqual([]);
});

it('keeps a 2,000-child fan-out page responsive: one page of children at a time (times logged)', async () => {
  // Children from 1000 on wait for a message that never comes: the run stays mid-fan-out.
  const gate = `gate.${nanoid(6)}`;
  const handle = await engine.start(fan, { n: 2000 }, { params: { gate, gateFrom: 1000, failIndex: 500 } });
  await waitFor('1000 children ended', async () => (await engine.get(handle.id))?.children?.ended === 1000);
  const { page, pageErrors, shot } = await openPage(browser);
  const grid = page.getByTestId('children-grid');

  const started = performance.now();
  await page.goto(`${studio.url}/runs/${handle.id}`);
  await grid.locator('tbody tr').nth(99).waitFor();
  await page.getByTestId('fan-out-progress').filter({ hasText: '1,000 of 2,000 children ended, 1 failed' }).waitFor();
  const firstRender = performance.now() - started;

  let mark = performance.now();
  await page.getByLabel('Per page').selectOption('500');
  await grid.locator('tbody tr').nth(499).waitFor();
  const bigPage = performance.now() - mark;

  mark = performance.now();
  const pager = page.getByRole('navigation', { name: 'Pages of children' });
  await pager.getByRole('button', { name: 'Next' }).click();
  await grid.locator('tr.row-failed').filter({ hasText: 'child 500 refuses to square' }).waitFor();
  await pager.getByRole('button', { name: 'Last' }).click();
  await pager.filter({ hasText: '1,501–2,000 of 2,000 children' }).waitFor();
  const paging = performance.now() - mark;
  expect(await grid.locator('tbody tr.row-waiting').count()).toBe(500);

  console.log(
    `studio scale: run with 2000 children: first render ${Math.round(firstRender)} ms; ` +
      `500 per page ${Math.round(bigPage)} ms; next and last page ${Math.round(paging)} ms`,
  );
  await shot('run-fan-out-2000');
  await page.close();
  expect(pageErrors).toEqual([]);
});
