/**
 * The heartbeat thread is one per process, shared by its workers (packages/worker
 * src/heartbeat-host.ts): a worker that stops ends its own beats only. Proof that the thread,
 * not the main thread, still beats for the other worker: with the process's main loop blocked
 * (only a thread can run then), that worker's registry entry is still renewed, with the loop's
 * lag measured.
 */
import { afterAll, expect, it } from 'vitest';
import { RedisEngine, startWorker, type QueueflowWorker } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';

const prefix = testPrefix('shared-heartbeat');
const engine = new RedisEngine({ connection: redisUrl(), flows: [], prefix });
const workers: QueueflowWorker[] = [];
afterAll(async () => {
  for (const worker of workers) await worker.close();
  await engine.close();
  await deletePrefix(redisUrl(), prefix);
});

/** Blocks this process's main loop for `ms` (a synchronous step would). */
function blockLoop(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy: no timer, no I/O, no main-thread beat
  }
}

it("keeps beating for a process's other workers once one of them stops", async () => {
  for (let i = 0; i < 2; i++) workers.push(await startWorker({ connection: redisUrl(), flows: [], prefix }));
  const stopped = workers[0]!;
  // Both beat from the thread (its beats carry the main loop's lag).
  await waitFor('both workers to beat from the heartbeat thread', async () => {
    const listed = await engine.workers();
    return listed.length === 2 && listed.every((worker) => worker.loopLagMs !== undefined);
  });
  await stopped.close();
  workers.shift();
  expect(await engine.workers()).toHaveLength(1);

  const before = (await engine.workers())[0]!.lastSeenAt;
  blockLoop(3500); // a beat (every 2 s) falls at least 1 s into any 3.2 s: the lag shows
  const after = (await engine.workers())[0]!;
  expect(after.lastSeenAt).toBeGreaterThan(before);
  expect(after.loopLagMs).toBeGreaterThanOrEqual(1000);
});

it('beats where each worker connects: REDIS_URL as it was at that worker’s start, not at the thread’s', async () => {
  // The thread started with the first worker (above, or now): a worker given no `connection` later
  // reads REDIS_URL, here another database, which the thread's own environment does not hold.
  workers.push(await startWorker({ connection: redisUrl(), flows: [], prefix }));
  const elsewhere = `${redisUrl()}/3`;
  const before = process.env.REDIS_URL;
  process.env.REDIS_URL = elsewhere;
  const onDb3 = new RedisEngine({ connection: elsewhere, flows: [], prefix });
  try {
    workers.push(await startWorker({ flows: [], prefix }));
    await waitFor('the worker on database 3 to beat from the heartbeat thread', async () => {
      const listed = await onDb3.workers();
      return listed.length === 1 && listed[0]!.loopLagMs !== undefined;
    });
  } finally {
    if (before === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = before;
    await workers.pop()!.close();
    await deletePrefix(elsewhere, prefix);
    await onDb3.close();
  }
});
