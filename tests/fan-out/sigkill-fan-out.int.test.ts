/**
 * Fault (issue 4, item 7; DESIGN "Fault"): SIGKILL one of 3 worker processes in the middle of a
 * 2,000-child ParallelBatchFlow. The killed worker's steps are taken over once their locks expire
 * (short lock and stall interval here), and the parent completes with all 2,000 results, none
 * applied twice: every child appends its key to one array, which must hold exactly the 2,000
 * keys, each once, in param-set order.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { childKey, thousands } from './fan-out-flows.js';

const FLOWS = fileURLToPath(new URL('./fan-out-flows.ts', import.meta.url));
const CHILDREN = 2000;

describe('fault: SIGKILL a worker in the middle of a 2,000-child fan-out', () => {
  const prefix = testPrefix('sigkill-fan-out');
  const probeKey = `${prefix}:probe`;
  let workers: WorkerProcess[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [thousands], prefix });
  const redis = new Redis(redisUrl());

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    redis.disconnect();
    await deletePrefix(redisUrl(), prefix);
  });

  it('completes with all 2,000 results, none applied twice, in param-set order', async () => {
    // A short lock so the killed worker's steps are taken over within seconds.
    const options = {
      flows: FLOWS,
      redisUrl: redisUrl(),
      prefix,
      concurrency: 8,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    const handle = await engine.start(
      thousands,
      { n: CHILDREN, keys: [] },
      { params: { probeUrl: redisUrl(), probeKey, holdMs: 10 } },
    );

    await waitFor(
      'a fifth of the children to end',
      async () => ((await engine.get(handle.id))?.children?.ended ?? 0) >= CHILDREN / 5,
    );
    // The process that started a child last is running children now.
    const pid = Number(await redis.get(`${probeKey}:current`));
    const victim = workers.find((w) => w.pid === pid);
    expect(victim, `the worker running children (pid ${pid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');
    const atKill = await engine.get(handle.id);
    expect(atKill?.status, 'the fan-out was still running when the worker died').toBe('waiting');
    expect(atKill?.children?.ended).toBeLessThan(CHILDREN);

    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    const keys = result.shared.keys as string[];
    expect(keys).toHaveLength(CHILDREN);
    expect(new Set(keys).size).toBe(CHILDREN);
    expect(keys).toEqual(Array.from({ length: CHILDREN }, (_, i) => childKey(i)));
    // Every child ran (some more than once: exec is at-least-once), and the survivors finished the work.
    expect(await redis.hlen(`${probeKey}:execs`)).toBe(CHILDREN);
    const info = await engine.get(handle.id);
    expect(info?.status).toBe('completed');
    expect(info?.conflicts).toEqual([]);
  }, 120_000);
});
