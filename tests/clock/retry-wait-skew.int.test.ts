/**
 * Fault: a worker whose clock runs 30 s ahead (issue 16, item 8). BullMQ keeps a retry's wait in
 * its delayed set scored on the clock of the worker whose try failed, and any worker promotes
 * jobs on its own clock: the fast worker took tries of the other worker's runs at once, skipping
 * their 2 s waits. The step driver keeps the wait on the Redis server's clock (`retryAt`).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { failsOnce } from './skew-flows.js';

const FLOWS = fileURLToPath(new URL('./skew-flows.ts', import.meta.url));
const SKEWED_DATE = fileURLToPath(new URL('./skewed-date.mjs', import.meta.url));
const RUNS = 20;

describe('retry waits with a worker whose clock is 30 s ahead', () => {
  const prefix = testPrefix('retry-skew');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [failsOnce], prefix });
  let workers: WorkerProcess[] = [];
  afterAll(async () => {
    await stopWorkers(workers);
    await engine.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it('every 2 s wait between tries lasts 2 s on the server clock, whichever worker takes the try', async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4 };
    workers = await Promise.all([
      spawnWorker(options),
      spawnWorker({
        ...options,
        env: { NODE_OPTIONS: `--import ${SKEWED_DATE}`, QF_TEST_CLOCK_OFFSET_MS: '30000' },
      }),
    ]);
    const handles = await Promise.all(Array.from({ length: RUNS }, () => engine.start(failsOnce, {})));
    const waits = await Promise.all(
      handles.map(async (handle) => {
        const result = await handle.result({ timeoutMs: 60_000 });
        expect(result.status, JSON.stringify(result.error)).toBe('completed');
        const [info, history] = await Promise.all([engine.get(handle.id), engine.history(handle.id)]);
        // The first try failed at errors[0].at; the step committed after the second try.
        return history[0]!.endedAt - info!.errors[0]!.at!;
      }),
    );
    console.log(`retry waits (ms, server clock), 2000 asked: ${waits.sort((a, b) => a - b).join(' ')}`);
    for (const waitedMs of waits) expect(waitedMs).toBeGreaterThanOrEqual(1900);
  });
});
