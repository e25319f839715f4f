/**
 * createStudioHandler over a fake engine: the page and its files, every API route with its
 * checks and error answers, read-only, the token, mounting under a path, and the live events
 * (one engine subscription however many pages listen).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createStudioHandler, type StudioHandler, type StudioHandlerOptions } from '../../src/index.js';
import { demoEngine } from './demo-runs.js';
import type { FakeStudioEngine } from './fake-studio-engine.js';

/** A page build of three files, so these tests need no Vite build. */
function fakeAssets(): string {
  const dir = mkdtempSync(join(tmpdir(), 'qf-studio-assets-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><html><head><title>studio</title></head><body></body></html>');
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log("studio")');
  return dir;
}
const ASSETS = fakeAssets();

interface Running {
  url: string;
  engine: FakeStudioEngine;
  handler: StudioHandler;
}
const servers: { server: Server; handler: StudioHandler }[] = [];
afterEach(async () => {
  for (const { server, handler } of servers.splice(0)) {
    await handler.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(
  options: Partial<StudioHandlerOptions> = {},
  wrap?: (handler: StudioHandler) => (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Running> {
  const engine = demoEngine({ fanOut: 250, filler: 30 });
  const handler = createStudioHandler({ engine, assetsDir: ASSETS, ...options });
  const server = createServer(wrap ? wrap(handler) : handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({ server, handler });
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, engine, handler };
}

async function json(response: Response): Promise<any> {
  return JSON.parse(await response.text());
}

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

describe('the page and its files', () => {
  it('serves index.html for each view URL, with the base path and config written in, never cached', async () => {
    const { url } = await serve();
    for (const path of ['/', '/runs/waitingReview1', '/workers', '/mailboxes', '/runs/fanOutDocs1.1.7']) {
      const response = await fetch(url + path);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      const html = await response.text();
      expect(html).toContain('<base href="/">');
      expect(html).toContain('{"basePath":"","readOnly":false}');
    }
  });

  it('serves hashed files with a year-long immutable cache, and 404 for a file it does not have', async () => {
    const { url } = await serve();
    const asset = await fetch(`${url}/assets/index-abc123.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public,max-age=31536000,immutable');
    expect(asset.headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${url}/assets/nope.js`)).status).toBe(404);
  });

  it('says how to build the page when this copy has none', async () => {
    const { url } = await serve({ assetsDir: mkdtempSync(join(tmpdir(), 'qf-empty-')) });
    const response = await fetch(url);
    expect(response.status).toBe(503);
    expect(await response.text()).toContain('npm run build');
  });
});

describe('the API: reads', () => {
  it('lists runs newest first, a page at a time, with the total from the counts', async () => {
    const { url } = await serve();
    const first = await json(await fetch(`${url}/api/runs?limit=10`));
    expect(first.runs).toHaveLength(10);
    expect(first.runs[0].id).toBe('fanOutDocs1');
    expect(first).toMatchObject({ offset: 0, limit: 10, hasMore: true, total: 34 });
    const last = await json(await fetch(`${url}/api/runs?limit=10&offset=30`));
    expect(last.runs).toHaveLength(4);
    expect(last.hasMore).toBe(false);
  });

  it('filters by status and flow, and counts per status and flow', async () => {
    const { url } = await serve();
    const failed = await json(await fetch(`${url}/api/runs?status=failed&flow=review`));
    expect(failed.runs.every((run: any) => run.status === 'failed' && run.flow === 'review')).toBe(true);
    const counts = await json(await fetch(`${url}/api/runs/counts`));
    expect(counts.total).toBe(34);
    expect(counts.counts.waiting).toBe(2);
    expect(counts.flows.review.failed).toBe(failed.runs.length);
    expect(failed.total).toBe(failed.runs.length);
  });

  it('takes the counts from one listing per second however many ask', async () => {
    const { url, engine } = await serve();
    await Promise.all(Array.from({ length: 5 }, () => fetch(`${url}/api/runs/counts`)));
    await fetch(`${url}/api/runs?limit=5`);
    const censuses = engine.calls.filter(([method, options]) => method === 'list' && (options as any).limit > 1000);
    expect(censuses).toHaveLength(1);
  });

  it('searches by id: an exact id (a fan-out child too), then ids that contain the text', async () => {
    const { url } = await serve();
    const child = await json(await fetch(`${url}/api/runs?q=fanOutDocs1.1.5`));
    expect(child.runs.map((run: any) => run.id)).toEqual(['fanOutDocs1.1.5']);
    expect(child.runs[0]).not.toHaveProperty('shared');
    const part = await json(await fetch(`${url}/api/runs?q=Review`));
    expect(part.runs.map((run: any) => run.id).sort()).toEqual(['completedReview1', 'failedReview1', 'waitingReview1']);
  });

  it('answers a run, its history, its shared at a step, a step diff and its children', async () => {
    const { url } = await serve();
    const run = await json(await fetch(`${url}/api/runs/waitingReview1`));
    expect(run).toMatchObject({ id: 'waitingReview1', status: 'waiting', currentNode: 'approve' });
    const history = await json(await fetch(`${url}/api/runs/waitingReview1/history`));
    expect(history.map((step: any) => step.node)).toEqual(['load', 'enrich']);
    const shared = await json(await fetch(`${url}/api/runs/waitingReview1/shared?step=1`));
    expect(shared).toEqual({ step: 1, shared: { title: 'A post', draft: 'Queues are great', log: [] } });
    const diff = await json(await fetch(`${url}/api/runs/waitingReview1/steps/1/diff`));
    expect(diff.before.draft).toBe('Queues are great');
    expect(diff.after.draft).toBe('Queues are great, and durable');
    const children = await json(await fetch(`${url}/api/runs/fanOutDocs1/children?offset=200&limit=100`));
    expect(children.children).toHaveLength(50);
    expect(children.children[0].index).toBe(200);
    expect(children.hasMore).toBe(false);
  });

  it('diffs a step whose before the engine has no checkpoint of (between a fan-out and its fan-in) from the step before', async () => {
    const { url, engine } = await serve();
    const sharedAt = engine.sharedAt.bind(engine);
    engine.sharedAt = async (runId, step) => {
      if (runId === 'completedReview1' && step === 2)
        throw Object.assign(new Error('waited on a fan-out'), { code: 'INVALID_OPTION' });
      return sharedAt(runId, step);
    };
    const diff = await json(await fetch(`${url}/api/runs/completedReview1/steps/2/diff`));
    expect(diff.before).toEqual(await sharedAt('completedReview1', 2));
    expect(diff.after).toEqual(await sharedAt('completedReview1', 3));
    expect((await fetch(`${url}/api/runs/completedReview1/steps/9/diff`)).status).toBe(404);
  });

  it('answers workers, mailboxes and a flow graph', async () => {
    const { url } = await serve();
    expect(await json(await fetch(`${url}/api/workers`))).toHaveLength(2);
    const mailboxes = await json(await fetch(`${url}/api/mailboxes?messages=5`));
    expect(mailboxes.map((box: any) => box.address)).toContain('approvals');
    const graph = await json(await fetch(`${url}/api/flows/review/graph`));
    expect(graph.mermaidIds.approve).toBe('n3');
  });

  it('answers errors as JSON with their status: unknown run 404, bad input 400, unknown flow 404, no route 404, wrong method 405', async () => {
    const { url } = await serve();
    const cases: [string, RequestInit, number, string][] = [
      ['/api/runs/nope', {}, 404, 'RUN_NOT_FOUND'],
      ['/api/runs/bad%20id', {}, 400, 'BAD_REQUEST'],
      ['/api/runs?status=lost', {}, 400, 'BAD_REQUEST'],
      ['/api/runs?limit=0', {}, 400, 'BAD_REQUEST'],
      ['/api/runs?offset=-1', {}, 400, 'BAD_REQUEST'],
      ['/api/runs/waitingReview1/shared?step=x', {}, 400, 'BAD_REQUEST'],
      ['/api/runs/waitingReview1/shared?step=9', {}, 400, 'INVALID_OPTION'],
      ['/api/runs/waitingReview1/steps/-1/diff', {}, 400, 'BAD_REQUEST'],
      ['/api/flows/unknown/graph', {}, 404, 'UNKNOWN_FLOW'],
      ['/api/nothing', {}, 404, 'NOT_FOUND'],
      ['/api/runs', { method: 'PUT' }, 405, 'METHOD_NOT_ALLOWED'],
      ['/api/runs/waitingReview1/cancel', { method: 'GET' }, 405, 'METHOD_NOT_ALLOWED'],
    ];
    for (const [path, init, status, code] of cases) {
      const response = await fetch(url + path, init);
      expect(response.status, path).toBe(status);
      const body = await json(response);
      expect(body.error.code, path).toBe(code);
      expect(body.error.message, path).toEqual(expect.any(String));
    }
  });
});

describe('the API: actions', () => {
  it('cancels, and retries a cancelled run; a run that cannot be retried is a 409', async () => {
    const { url, engine } = await serve();
    expect((await post(`${url}/api/runs/waitingReview1/cancel`, {})).status).toBe(200);
    expect(engine.runs.get('waitingReview1')!.info.status).toBe('cancelled');
    expect(await json(await post(`${url}/api/runs/waitingReview1/retry`, {}))).toEqual({ id: 'waitingReview1' });
    const refused = await post(`${url}/api/runs/completedReview1/retry`, {});
    expect(refused.status).toBe(409);
    expect((await json(refused)).error.code).toBe('RUN_NOT_RETRYABLE');
  });

  it('a cancel of a run that has ended is a 409 naming its status, and changes nothing', async () => {
    const { url, engine } = await serve();
    const refused = await post(`${url}/api/runs/completedReview1/cancel`, {});
    expect(refused.status).toBe(409);
    expect((await json(refused)).error).toEqual({
      code: 'RUN_ENDED',
      message: "run 'completedReview1' has already ended (completed): nothing to cancel",
    });
    expect(engine.runs.get('completedReview1')!.info.status).toBe('completed');
    expect((await post(`${url}/api/runs/no-such-run/cancel`, {})).status).toBe(404);
  });

  it('children of an unknown run is a 404, as its other parts are; of a run without a fan-out, none', async () => {
    const { url } = await serve();
    const unknown = await fetch(`${url}/api/runs/no-such-run/children`);
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe('RUN_NOT_FOUND');
    const none = await fetch(`${url}/api/runs/completedReview1/children`);
    expect(await json(none)).toMatchObject({ children: [], hasMore: false });
  });

  it('forks from a step with an edited shared, turned into a JSON Patch', async () => {
    const { url, engine } = await serve();
    const edited = { title: 'A post', draft: 'Queues are great', log: [], tags: ['edited'] };
    const forked = await json(await post(`${url}/api/runs/waitingReview1/fork`, { step: 1, shared: edited }));
    expect(forked.patch).toEqual([{ op: 'add', path: '/tags', value: ['edited'] }]);
    expect(engine.runs.get(forked.id)!.info.shared).toEqual(edited);
    expect(engine.runs.get(forked.id)!.info.forkedFrom).toEqual({ runId: 'waitingReview1', step: 1 });
    const byPatch = await json(
      await post(`${url}/api/runs/waitingReview1/fork`, { step: 0, patch: [{ op: 'add', path: '/x', value: 1 }] }),
    );
    expect(engine.runs.get(byPatch.id)!.info.shared).toEqual({ title: 'A post', x: 1 });
  });

  it('refuses a bad fork: both patch and shared, a patch that is not one, a step out of range, shared not an object', async () => {
    const { url } = await serve();
    const fork = (body: unknown) => post(`${url}/api/runs/waitingReview1/fork`, body);
    const cases: [unknown, number, string][] = [
      [{ step: 1, patch: [], shared: {} }, 400, 'BAD_REQUEST'],
      [{ step: 1, patch: [{ op: 'explode', path: '/a' }] }, 400, 'BAD_REQUEST'],
      [{ step: 1, patch: 'nope' }, 400, 'BAD_REQUEST'],
      [{ step: 1, patch: [{ op: 'remove', path: '/missing' }] }, 400, 'INVALID_OPTION'],
      [{ step: 7 }, 400, 'INVALID_OPTION'],
      [{ step: -1 }, 400, 'BAD_REQUEST'],
      [{ step: 1, shared: [1, 2] }, 400, 'BAD_REQUEST'],
      [[1], 400, 'BAD_REQUEST'],
    ];
    for (const [body, status, code] of cases) {
      const response = await fork(body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect((await json(response)).error.code, JSON.stringify(body)).toBe(code);
    }
  });

  it('refuses a body nested past the depth limit with a 400 before any check runs (a fork patch 1,000,000 deep)', async () => {
    const { url, engine } = await serve();
    const deep = 1_000_000;
    const value = `${'['.repeat(deep)}${']'.repeat(deep)}`;
    const response = await fetch(`${url}/api/runs/waitingReview1/fork`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: `{"step":1,"patch":[{"op":"add","path":"/x","value":${value}}]}`,
    });
    expect(response.status).toBe(400);
    const { error } = await json(response);
    expect(error.code).toBe('BAD_REQUEST');
    expect(error.message).toMatch(/nested deeper than 256 levels/);
    expect(engine.calls.filter(([method]) => method === 'fork')).toEqual([]);
    // At the limit it is taken.
    const nested = (levels: number): unknown => {
      let v: unknown = 1;
      for (let i = 0; i < levels; i++) v = [v];
      return v;
    };
    const taken = await post(`${url}/api/runs/waitingReview1/fork`, {
      step: 1,
      patch: [{ op: 'add', path: '/x', value: nested(250) }],
    });
    expect(taken.status).toBe(200);
  });

  it('answers a parked ask: the message leaves its mailbox and the asking run goes on', async () => {
    const { url, engine } = await serve();
    const answered = await post(`${url}/api/answers`, { address: 'approvals', messageId: 'msg-1', body: 'yes' });
    expect(answered.status).toBe(200);
    expect(engine.runs.get('waitingReview1')!.info.status).toBe('completed');
    const again = await post(`${url}/api/answers`, { address: 'approvals', messageId: 'msg-1', body: 'yes' });
    expect(again.status).toBe(404);
    expect((await json(again)).error.code).toBe('MESSAGE_NOT_FOUND');
    for (const body of [
      { address: 'a b', messageId: 'm', body: 1 },
      { address: 'a', messageId: '', body: 1 },
      { address: 'a', messageId: 'm' },
    ]) {
      expect((await post(`${url}/api/answers`, body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('wants a JSON body: 415 for another type, 400 for bad JSON, 413 past the limit', async () => {
    const { url } = await serve({ maxBodyBytes: 1024 });
    const form = await fetch(`${url}/api/runs/waitingReview1/cancel`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'a=1',
    });
    expect(form.status).toBe(415);
    const broken = await fetch(`${url}/api/answers`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"address":',
    });
    expect(broken.status).toBe(400);
    const big = await post(`${url}/api/answers`, { address: 'approvals', messageId: 'msg-1', body: 'x'.repeat(2000) });
    expect(big.status).toBe(413);
    expect((await json(big)).error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('read-only: the page is told so, and every action is a 403 that changes nothing', async () => {
    const { url, engine } = await serve({ readOnly: true });
    expect(await (await fetch(url)).text()).toContain('"readOnly":true');
    for (const path of [
      '/api/runs/waitingReview1/cancel',
      '/api/runs/failedReview1/retry',
      '/api/runs/waitingReview1/fork',
      '/api/answers',
    ]) {
      const response = await post(url + path, { step: 0, address: 'approvals', messageId: 'msg-1', body: 1 });
      expect(response.status, path).toBe(403);
      expect((await json(response)).error.code).toBe('READ_ONLY');
    }
    expect(engine.calls.filter(([method]) => ['cancel', 'retry', 'fork', 'answer'].includes(method as string))).toEqual(
      [],
    );
    expect((await fetch(`${url}/api/runs`)).status).toBe(200);
  });
});

describe('the token', () => {
  it('is needed by every request: as a bearer header or ?token= for the API; the page also takes its cookie', async () => {
    const { url } = await serve({ token: 'sesame-1234' });
    expect((await fetch(`${url}/api/runs`)).status).toBe(401);
    expect((await json(await fetch(`${url}/api/runs`))).error.code).toBe('UNAUTHORIZED');
    expect((await fetch(`${url}/api/runs`, { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${url}/api/runs`, { headers: { Authorization: 'Bearer sesame-1234' } })).status).toBe(200);
    expect((await fetch(`${url}/api/runs?token=sesame-1234`)).status).toBe(200);
    expect((await post(`${url}/api/runs/waitingReview1/cancel`, {})).status).toBe(401);
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(`${url}/assets/index-abc123.js`)).status).toBe(401);

    const page = await fetch(`${url}/runs/waitingReview1?token=sesame-1234`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('"token":"sesame-1234"');
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!;
    expect(page.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict; Path=\//);
    expect((await fetch(`${url}/workers`, { headers: { cookie } })).status).toBe(200);
    expect((await fetch(`${url}/assets/index-abc123.js`, { headers: { cookie } })).status).toBe(200);
    // The cookie opens the page and its files, never the API: another site cannot act through it.
    expect((await fetch(`${url}/api/runs`, { headers: { cookie } })).status).toBe(401);
  });
});

describe('mounting under a path', () => {
  it('on a plain server with basePath: its URLs under the path, anything else 404 (or next)', async () => {
    const { url } = await serve({ basePath: '/studio/' });
    const page = await fetch(`${url}/studio/runs/waitingReview1`);
    expect(await page.text()).toContain('<base href="/studio/">');
    expect((await fetch(`${url}/studio/api/runs`)).status).toBe(200);
    expect((await fetch(`${url}/studio/assets/index-abc123.js`)).status).toBe(200);
    expect((await fetch(`${url}/elsewhere`)).status).toBe(404);
  });

  it('where a framework took the mount path off req.url (Express, middie): the base path comes from it', async () => {
    // What Express's app.use('/admin/studio', handler) and @fastify/middie do to the request.
    const { url } = await serve({}, (handler) => (req, res) => {
      const original = req.url!;
      if (!original.startsWith('/admin/studio')) return void res.writeHead(404).end();
      Object.assign(req, { originalUrl: original, url: original.slice('/admin/studio'.length) || '/' });
      handler(req, res, () => res.writeHead(404).end());
    });
    expect(await (await fetch(`${url}/admin/studio/mailboxes`)).text()).toContain('<base href="/admin/studio/">');
    expect(await (await fetch(`${url}/admin/studio`)).text()).toContain('"basePath":"/admin/studio"');
    expect((await fetch(`${url}/admin/studio/api/workers`)).status).toBe(200);
  });

  it('refuses a base path that is not a URL path', () => {
    expect(() => createStudioHandler({ engine: demoEngine(), basePath: 'studio' })).toThrow(TypeError);
    expect(() => createStudioHandler({ engine: demoEngine(), token: '' })).toThrow(TypeError);
  });
});

interface SseEvent {
  event: string;
  data: any;
}

/** A page's event stream: `until` reads events until it has what it wants (and returns them). */
function eventStream(response: Response) {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const pending: SseEvent[] = [];
  return {
    async until(enough: (seen: SseEvent[]) => boolean): Promise<SseEvent[]> {
      const seen: SseEvent[] = [];
      for (;;) {
        while (pending.length > 0) {
          seen.push(pending.shift()!);
          if (enough(seen)) return seen;
        }
        const { value, done } = await reader.read();
        if (done) return seen;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) pending.push({ event, data: JSON.parse(data) });
        }
      }
    },
    close: () => reader.cancel(),
  };
}

describe('live events', () => {
  const has = (name: string) => (seen: SseEvent[]) => seen.some((e) => e.event === name);

  it('one engine subscription for every open page: run changes in batches, then the counts', async () => {
    const { url, engine } = await serve({ live: { batchMs: 20, countsEveryMs: 50, snapshotEveryMs: 60_000 } });
    const responses = await Promise.all([fetch(`${url}/api/events`), fetch(`${url}/api/events`)]);
    expect(responses[0]!.headers.get('content-type')).toContain('text/event-stream');
    const pages = responses.map(eventStream);
    await Promise.all(pages.map((page) => page.until(has('hello'))));
    expect(engine.watchCount).toBe(1);

    await post(`${url}/api/runs/waitingReview1/cancel`, {});
    engine.emit('failedReview1');
    // On a loaded machine the two changes may come in two batches: read until both came, then
    // the counts that follow them.
    const changed = (seen: SseEvent[]): { runId: string }[] =>
      seen.filter((e) => e.event === 'runs').flatMap((e) => e.data as { runId: string }[]);
    const bothThenCounts = (seen: SseEvent[]): boolean =>
      seen.at(-1)?.event === 'counts' &&
      ['waitingReview1', 'failedReview1'].every((id) => changed(seen).some((run) => run.runId === id));
    for (const page of pages) {
      const seen = await page.until(bothThenCounts);
      expect(changed(seen)).toEqual(
        expect.arrayContaining([
          { runId: 'waitingReview1', status: 'cancelled', steps: 2 },
          { runId: 'failedReview1', status: 'failed', steps: 1 },
        ]),
      );
      expect(seen.at(-1)!.data.counts.cancelled).toBe(1);
    }
    for (const page of pages) await page.close();
    await expect.poll(() => engine.listeners.size).toBe(0);
  });

  it("tells every page hello again, then the counts, when the engine's subscription was made again", async () => {
    const { url, engine } = await serve({ live: { countsEveryMs: 50, snapshotEveryMs: 60_000 } });
    const pages = (await Promise.all([fetch(`${url}/api/events`), fetch(`${url}/api/events`)])).map(eventStream);
    await Promise.all(pages.map((page) => page.until(has('hello'))));

    engine.resync(); // changes published while the connection was down are lost: pages read again
    for (const page of pages) {
      const seen = await page.until(has('counts'));
      const hellos = seen.filter((e) => e.event === 'hello');
      expect(hellos).toHaveLength(1);
      expect(hellos[0]!.data).toMatchObject({ watching: true });
    }
    for (const page of pages) await page.close();
  });

  it('sends workers and mailboxes, read once for all pages, when they change', async () => {
    const { url, engine } = await serve({ live: { snapshotEveryMs: 30 } });
    const page = eventStream(await fetch(`${url}/api/events`));
    const first = await page.until(has('workers'));
    expect(first.find((e) => e.event === 'workers')!.data).toHaveLength(2);
    engine.workerList = engine.workerList.slice(0, 1);
    const next = await page.until(has('workers'));
    expect(next.find((e) => e.event === 'workers')!.data).toHaveLength(1);
    await page.close();
  });

  it('close() ends the open streams and drops the subscription', async () => {
    const { url, engine, handler } = await serve();
    const page = eventStream(await fetch(`${url}/api/events`));
    await page.until(has('hello'));
    await handler.close();
    await page.until(() => false); // returns once the stream has ended
    expect(engine.listeners.size).toBe(0);
    expect((await fetch(`${url}/api/events`)).status).toBe(503);
  });
});
