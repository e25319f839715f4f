/**
 * The parking proof (issue 5, "Parked waiting"): 2,000 runs each wait on a mailbox of their own,
 * served by ONE worker process at concurrency 8. All 2,000 are `waiting` at the same time, which
 * is only possible if a parked run holds no worker slot (8 slots, 2,000 runs), and the number of
 * Redis connections stays what it was with no run at all: a parked run holds no connection of
 * its own. Then 2,000 messages are sent with `engine.send` and every run completes with its own.
 *
 * The test has a `redis-server` of its own, so that `CLIENT LIST` shows only this test's
 * connections (the other test files share the suite's Redis).
 */
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEngine, RedisKeys } from '@queueflow/worker';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { waitOnce, type WaitOnceShared } from './mailbox-flows.js';

const FLOWS = fileURLToPath(new URL('./mailbox-flows.ts', import.meta.url));
const RUNS = 2_000;

interface Connections {
  /** Connections named `queueflow:<role>` (the worker's and the engine client's own). */
  queueflow: number;
  /** Every client connection but the one asking. */
  all: number;
}

describe(`parking: ${RUNS.toLocaleString('en-US')} runs waiting on their own mailboxes, one worker at concurrency 8`, () => {
  let server: LocalRedisServer;
  let worker: WorkerProcess | undefined;
  let engine: RedisEngine;
  let admin: Redis;
  const prefix = testPrefix('parking');
  const keys = new RedisKeys(prefix);

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
    worker = await spawnWorker({ flows: FLOWS, redisUrl: server.url, prefix, concurrency: 8 });
    engine = new RedisEngine({ connection: server.url, flows: [waitOnce], prefix });
  }, 120_000);

  afterAll(async () => {
    await engine?.close();
    await stopWorkers(worker ? [worker] : []);
    admin?.disconnect();
    await server?.stop();
  });

  async function connections(): Promise<Connections> {
    const lines = ((await admin.client('LIST')) as string).trim().split('\n');
    const names = lines.map((line) => /(?:^| )name=(\S*)/.exec(line)?.[1] ?? '');
    return { queueflow: names.filter((name) => name.startsWith('queueflow:')).length, all: lines.length - 1 };
  }

  async function waitingCount(ids: string[]): Promise<number> {
    const infos = await Promise.all(ids.map((id) => engine.get(id)));
    return infos.filter((info) => info?.status === 'waiting').length;
  }

  it('parks every run at once with the same few connections, then a send completes each with its own message', async () => {
    // Baseline: the worker and the engine client connected, no run yet.
    await engine.list({ limit: 1 });
    const before = await connections();

    const handles = await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        engine.start(waitOnce, {} as WaitOnceShared, { params: { address: `parked.${i}` } }),
      ),
    );
    const ids = handles.map((handle) => handle.id);
    await waitFor(`all ${RUNS} runs to be waiting at once`, async () => (await waitingCount(ids)) === RUNS, {
      timeoutMs: 60_000,
      intervalMs: 200,
    });

    // While all of them wait: no step job is active (no worker slot held), each run has its wake
    // job in the delayed set, and the connections are the baseline's.
    const steps = `${prefix}:${keys.stepQueue}`;
    expect(await admin.llen(`${steps}:active`)).toBe(0);
    expect(await admin.zcard(`${steps}:delayed`)).toBe(RUNS);
    const during = await connections();
    expect(during).toEqual(before);
    expect(during.queueflow).toBeLessThanOrEqual(8);
    expect(await waitingCount(ids)).toBe(RUNS);

    await Promise.all(ids.map((_, i) => engine.send(`parked.${i}`, { for: i })));
    const results = await Promise.all(handles.map((handle) => handle.result()));
    const wrong = results.filter(
      (result, i) => result.status !== 'completed' || (result.shared.got?.body as { for: number }).for !== i,
    );
    expect(
      wrong.map((result) => ({ id: result.id, status: result.status, got: result.shared.got, error: result.error })),
    ).toEqual([]);
    // Nothing is left in any mailbox.
    const left = await Promise.all(ids.map((_, i) => admin.llen(keys.mailbox(`parked.${i}`))));
    expect(left.every((n) => n === 0)).toBe(true);
  }, 120_000);
});
