/**
 * createStudioHandler mounted under /studio in each of the ways the README shows: Express
 * (`app.use`, with `express.json()` in front, which reads bodies first), Fastify through
 * `@fastify/middie`, and a plain `node:http` server with `basePath`, over a LocalEngine. The page
 * knows where it lives, its files load, the API reads and acts.
 */
import { createServer, type Server } from 'node:http';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import middie from '@fastify/middie';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEngine, setWarningHandler } from '@queueflow/runtime';
import { createStudioHandler, type StudioHandler } from '@queueflow/worker';
import { studioFlows, sum, wait } from './studio-flows.js';

const ASSET = readdirSync(fileURLToPath(new URL('../../packages/worker/dist/studio-ui/assets/', import.meta.url))).find(
  (name) => name.endsWith('.js'),
)!;

let engine: LocalEngine;
beforeAll(() => {
  setWarningHandler(() => {});
  engine = new LocalEngine({ flows: studioFlows });
});
afterAll(async () => {
  await engine.close();
  setWarningHandler(null);
});

type Mounted = { url: string; close(): Promise<void> };

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const mounts: Record<string, (studio: StudioHandler) => Promise<Mounted>> = {
  'Express app.use, behind express.json()': async (studio) => {
    const app = express();
    app.use(express.json());
    app.use('/studio', studio);
    app.get('/', (_req, res) => void res.send('the app'));
    const server = createServer(app);
    const url = await listen(server);
    return { url, close: () => new Promise((resolve) => server.close(() => resolve())) };
  },
  'Fastify with @fastify/middie': async (studio) => {
    const app = Fastify();
    await app.register(middie);
    app.use('/studio', studio);
    app.get('/', async () => 'the app');
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, close: () => app.close() };
  },
  'node:http with basePath': async (studio) => {
    const server = createServer(studio);
    const url = await listen(server);
    return { url, close: () => new Promise((resolve) => server.close(() => resolve())) };
  },
};

describe.each(Object.keys(mounts))('the studio mounted with %s', (how) => {
  let mounted: Mounted;
  let studio: StudioHandler;
  beforeAll(async () => {
    studio = createStudioHandler({ engine, ...(how.startsWith('node:http') ? { basePath: '/studio' } : {}) });
    mounted = await mounts[how]!(studio);
  });
  afterAll(async () => {
    await studio.close();
    await mounted.close();
  });

  it('serves the page knowing its base path, and its files', async () => {
    // Every view opens from its URL (a reload, a shared link), ids encoded as the app encodes them.
    const views = ['/', '/runs/abc', '/queues', '/workers', '/mailboxes', '/agents', '/conversations'];
    const ids = ['/agents/agent%3Adesk-thread%2Fk', '/conversations/easy-ham-2%2F00199', '/conversations/c~fork'];
    for (const path of [...views, ...ids].map((view) => `/studio${view}`)) {
      const page = await fetch(mounted.url + path);
      expect(page.status, path).toBe(200);
      const html = await page.text();
      expect(html).toContain('<base href="/studio/">');
      expect(html).toContain(`./assets/`);
    }
    const asset = await fetch(`${mounted.url}/studio/assets/${ASSET}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toContain('immutable');
  });

  it('reads runs and acts on them through the API', async () => {
    const done = await engine.run(sum, { numbers: [1, 2] });
    const parked = await engine.start(wait, {}, { params: { address: `mount.${how.length}.${Date.now()}` } });
    const page = (await (await fetch(`${mounted.url}/studio/api/runs?limit=500`)).json()) as { runs: { id: string }[] };
    expect(page.runs.map((run) => run.id)).toEqual(expect.arrayContaining([done.id, parked.id]));

    const fork = await fetch(`${mounted.url}/studio/api/runs/${done.id}/fork`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ step: 1, shared: { numbers: [1, 2], doubled: [5, 5] } }),
    });
    expect(fork.status).toBe(200);
    const forked = (await fork.json()) as { id: string };
    expect((await engine.result(forked.id)).shared).toMatchObject({ total: 10 });

    const cancel = await fetch(`${mounted.url}/studio/api/runs/${parked.id}/cancel`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(cancel.status).toBe(200);
    expect((await engine.get(parked.id))!.status).toBe('cancelled');
  });

  it('leaves the rest of the app alone', async () => {
    const other = await fetch(`${mounted.url}/`);
    if (how.startsWith('node:http')) expect(other.status).toBe(404);
    else expect(await other.text()).toBe('the app');
  });
});
