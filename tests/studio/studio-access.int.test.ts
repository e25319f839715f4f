/**
 * Who may do what in the studio, in chromium against a real Redis and worker: read-only hides
 * every action and the API refuses them; `queueflow studio --token` prints its URL with the token,
 * and the page, its files and the API refuse a request without it.
 */
import { fileURLToPath } from 'node:url';
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startScript, type CliProcess } from '../support/cli-process.js';
import { redisUrl } from '../support/test-redis.js';
import { untilRun, waitFor } from '../support/wait-for.js';
import { review, type ReviewShared } from './studio-flows.js';
import { openPage, startStudio, STUDIO_FLOWS, type StudioSetup } from './support/studio-harness.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));

let s: StudioSetup;
let runId: string;
beforeAll(async () => {
  s = await startStudio('studio-access', { readOnly: true });
  const handle = await s.engine.start<ReviewShared>(
    review,
    { title: 'Read me' },
    { params: { desk: `desk.${nanoid(6)}` } },
  );
  runId = handle.id;
  await untilRun(s.engine, runId, 'parked on its ask', (info) => info.status === 'waiting');
}, 60_000);
afterAll(() => s?.close());

it('read-only: the page shows no action and no answer form, and the API refuses every action', async () => {
  const { page } = s;
  await page.goto(`${s.url}/runs/${runId}`);
  await page.getByTestId('read-only').waitFor();
  await page.getByTestId('graph-current').filter({ hasText: 'approve' }).waitFor();
  expect(await page.getByRole('group', { name: 'Run actions' }).count()).toBe(0);
  for (const name of ['Cancel run', 'Retry', 'Fork…']) expect(await page.getByRole('button', { name }).count()).toBe(0);
  await s.shot('read-only-run');

  await page.getByRole('link', { name: 'Mailboxes' }).click();
  const question = page.locator('.question').filter({ hasText: runId });
  await question.filter({ hasText: 'Read-only studio' }).waitFor();
  expect(await question.locator('form').count()).toBe(0);

  const actions: [string, unknown][] = [
    [`/api/runs/${runId}/cancel`, {}],
    [`/api/runs/${runId}/retry`, {}],
    [`/api/runs/${runId}/fork`, { step: 0 }],
    ['/api/answers', { address: 'desk', messageId: 'm', body: 'yes' }],
  ];
  for (const [path, body] of actions) {
    const response = await fetch(s.url + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status, path).toBe(403);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('READ_ONLY');
  }
  expect((await s.engine.get(runId))!.status).toBe('waiting');
  expect(s.pageErrors).toEqual([]);
});

it('queueflow studio --token: prints its URL with the token; without it the page, its files and the API answer 401', async () => {
  const token = `t-${nanoid(16)}`;
  let studio: CliProcess | undefined;
  try {
    studio = startScript(
      CLI,
      ['studio', '--port', '0', '--redis', redisUrl(), '--prefix', s.prefix, '--flows', STUDIO_FLOWS, '--token', token],
      { env: { ...process.env, NODE_OPTIONS: '--import tsx', NODE_NO_WARNINGS: '1' }, timeoutMs: 60_000 },
    );
    const printed = await waitFor('the studio to print its URL', () =>
      /queueflow studio: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(studio!.output().stdout),
    );
    const url = new URL(printed[1]!);
    expect(url.searchParams.get('token')).toBe(token);
    const base = url.origin;

    expect((await fetch(`${base}/`)).status).toBe(401);
    expect((await fetch(`${base}/runs/${runId}`)).status).toBe(401);
    expect((await fetch(`${base}/api/runs`)).status).toBe(401);
    expect((await fetch(`${base}/api/events`)).status).toBe(401);
    expect((await fetch(`${base}/api/runs`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);

    // The printed URL opens the studio; the page carries the token on every call after that.
    const { page, pageErrors, shot } = await openPage(s.browser);
    await page.goto(url.href);
    await page.locator(`tr[data-run-id="${runId}"]`).waitFor();
    await page.getByTestId('live-state').filter({ hasText: 'live' }).waitFor();
    expect(new URL(page.url()).searchParams.has('token')).toBe(false); // taken off the address bar
    await page.locator(`tr[data-run-id="${runId}"]`).getByRole('link').click();
    await page.getByTestId('graph-current').filter({ hasText: 'approve' }).waitFor();
    await page.reload(); // the page's cookie lets it load again without the token in the URL
    await page.getByTestId('graph-current').filter({ hasText: 'approve' }).waitFor();
    await shot('token-run');
    await page.close();
    expect(pageErrors).toEqual([]);

    studio.signal('SIGTERM');
    const exited = await studio.exited;
    expect(exited.code).toBe(0);
    expect(exited.stdout).toContain('SIGTERM, closing');
  } finally {
    studio?.signal('SIGKILL');
  }
});
