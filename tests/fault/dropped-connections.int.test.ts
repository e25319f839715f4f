import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Flow, Node, defineFlow } from '@queueflow/runtime';
import { RedisEngine, RedisKeys, startWorker } from '@queueflow/worker';
import { aborted } from '../support/node-probes.js';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor, within } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { countdown, countdownShared, oneTo } from './fault-flows.js';

const FLOWS = fileURLToPath(new URL('./fault-flows.ts', import.meta.url));

/** Runs whose step is in `exec`: what aborted it, once it is. */
const inExec = new Map<string, Promise<unknown>>();
class WaitForAbort extends Node {
  override async exec(): Promise<void> {
    const reason = aborted(this.signal);
    inExec.set(this.runContext!.runId, reason);
    throw await reason;
  }
}
const waitsForAbort = defineFlow('dropped-waits-for-abort', () => new Flow(new WaitForAbort({ name: 'wait' })));

/**
 * Redis closes every client connection (CLIENT KILL), as a failover, a proxy restart or a
 * network blip would, three times while runs are in flight. Workers and the client reconnect:
 * nothing is lost, nothing committed twice, and `result()` still resolves. A live view
 * (`engine.watch`) is told to read again once its subscription is back.
 */
describe('fault: Redis drops every client connection in the middle of runs', () => {
  const prefix = testPrefix('dropped');
  let server: LocalRedisServer; // a server of its own: killing clients on the shared one would hit other tests
  let admin: Redis;
  let workers: WorkerProcess[] = [];
  let engine: RedisEngine;

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
    engine = new RedisEngine({ connection: server.url, flows: [countdown, waitsForAbort], prefix });
  });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    admin.disconnect();
    await server.stop();
  });

  it('completes every run with each step committed once', async () => {
    // A job whose fetch reply was lost in a drop sits in BullMQ's active list with nobody holding
    // it until its lock expires and the stalled-job check hands it back: a short lock keeps that
    // recovery within seconds here (the default is 30 s).
    const options = {
      flows: FLOWS,
      redisUrl: server.url,
      prefix,
      concurrency: 4,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    const handles = await Promise.all(
      [0, 1, 2].map(() => engine.start(countdown, countdownShared(80), { params: { execMs: 5 } })),
    );
    const results = handles.map((handle) => handle.result());
    // The client fails fast while its connection is down (enableOfflineQueue: false, by design):
    // a poll that falls in that moment counts as no progress yet.
    const stepsOfFirst = async (): Promise<number> =>
      (await engine.get(handles[0]!.id).catch(() => undefined))?.steps ?? 0;

    for (const atStep of [10, 30, 50]) {
      await waitFor(`the first run to pass step ${atStep}`, async () => (await stepsOfFirst()) >= atStep);
      const dropped =
        ((await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')) as number) +
        ((await admin.client('KILL', 'TYPE', 'pubsub', 'SKIPME', 'yes')) as number);
      expect(dropped, 'connections closed by Redis').toBeGreaterThan(4);
    }

    for (const result of await Promise.all(results)) {
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      expect(result.shared.seen).toEqual(oneTo(80));
    }
    for (const handle of handles) expect((await engine.get(handle.id))?.steps).toBe(80);
    // These workers serve the fault flows only: left running, they would take the next test's
    // run, which they cannot run, and hand it back until its own worker got it (30 s and more).
    await stopWorkers(workers);
    workers = [];
  }, 120_000);

  it("aborts a running step whose run was cancelled while the worker's subscription was down", async () => {
    const worker = await startWorker({ connection: server.url, flows: [waitsForAbort], prefix, concurrency: 1 });
    try {
      const handle = await engine.start(waitsForAbort, {});
      await waitFor('the step to be in exec', () => inExec.has(handle.id));
      // The cancel's event lost: its record says cancelled, and no event came (as if published
      // while the subscription was down).
      await admin.hset(new RedisKeys(prefix).run(handle.id), 'status', 'cancelled');
      const dropped = (await admin.client('KILL', 'TYPE', 'pubsub', 'SKIPME', 'yes')) as number;
      expect(dropped, 'subscriptions closed by Redis').toBeGreaterThan(0);
      const reason = await within(inExec.get(handle.id)!, 30_000, 'the step was never aborted');
      expect(reason).toMatchObject({ code: 'RUN_CANCELLED' });
    } finally {
      await worker.close();
    }
  });

  it('tells a watcher to read again once its subscription is back; changes reach it again', async () => {
    const heard: string[] = [];
    let resubscribed!: () => void;
    const back = new Promise<void>((resolve) => (resubscribed = resolve));
    const unwatch = await engine.watch((change) => heard.push(change.runId), { resync: () => resubscribed() });
    const dropped = (await admin.client('KILL', 'TYPE', 'pubsub', 'SKIPME', 'yes')) as number;
    expect(dropped, 'subscriptions closed by Redis').toBeGreaterThan(0);
    await within(back, 30_000, 'the watcher was never told to read again');
    // Told only once subscribed again: a change published right away is heard.
    const handle = await engine.start(countdown, countdownShared(1));
    await waitFor("the new run's change", () => heard.includes(handle.id));
    unwatch();
  });
});
