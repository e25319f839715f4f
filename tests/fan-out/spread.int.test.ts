/**
 * Fan-out across worker processes (issue 4, items 1–3): 3 `queueflow worker` processes at
 * concurrency 8 each. ParallelBatchFlow children and ParallelBatchNode items run on several
 * processes; the fan-in `post` runs once, after the last child; a node's retry and backoff hold
 * per item, with the item's own try index; `concurrency` caps the children in flight for one
 * fan-out across all workers together.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { ITEM_TRIES, items, LIMIT, limitedFlow, limitedNode, spread } from './fan-out-flows.js';

/** What the tests read of a run's `shared`. */
type Shared = Record<string, any>;

const FLOWS = fileURLToPath(new URL('./fan-out-flows.ts', import.meta.url));

function range(n: number, prefix = 'k'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}

describe('fan-out over 3 worker processes', () => {
  const prefix = testPrefix('fan-out-spread');
  const flows = [spread, items, limitedFlow, limitedNode];
  let workers: WorkerProcess[] = [];
  let engine: RedisEngine;
  let redis: Redis;
  let probes = 0;
  /** Run params of one test: the probe connection and a key of its own under the prefix. */
  const probeParams = (): { probeUrl: string; probeKey: string } => ({
    probeUrl: redisUrl(),
    probeKey: `${prefix}:probe${probes++}`,
  });
  const workerPids = (): number[] => workers.map((w) => w.pid);

  beforeAll(async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 8 };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    engine = new RedisEngine({ connection: redisUrl(), flows, prefix });
    redis = new Redis(redisUrl());
  }, 120_000);

  afterAll(async () => {
    await engine?.close();
    await stopWorkers(workers);
    redis?.disconnect();
    await deletePrefix(redisUrl(), prefix);
  });

  it('ParallelBatchFlow: children run on more than one process; the fan-in commits once, after the last child', async () => {
    const keys = range(60);
    const params = probeParams();
    // 60 children of 50 ms on 24 slots: no one worker can take them all while the others idle.
    const result = await engine.run<Shared>(spread, { keys }, { params: { ...params, holdMs: 50 } });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.lastAction).toBe('gathered');
    const pids = result.shared.pids as Record<string, number>;
    expect(Object.keys(pids).sort()).toEqual([...keys].sort());
    const used = new Set(Object.values(pids));
    expect(used.size, `children ran on pids ${[...used].join(', ')}`).toBeGreaterThan(1);
    for (const pid of used) expect(workerPids()).toContain(pid);
    // The fan-in committed exactly once, after the last child: the run's history holds the fan-out
    // (#0) and one fan-in (#1) that merged every child, and the post that committed saw every
    // child's result. Counting the runs of post's code (`:posts`) cannot say this: node code runs
    // at least once (DESIGN "Steps"). A worker that loses the fan-in step's lock (its event loop
    // held past lockDuration on a loaded machine) has post run again on the worker that takes the
    // step over; one of the two commits, the step counter refuses the other.
    const history = await engine.history(result.id);
    expect(history.map((h) => [h.step, h.node, h.merged?.children])).toEqual([
      [0, 'gather', undefined],
      [1, 'gather', keys.length],
    ]);
    expect(result.shared.resultsSeenByPost).toBe(keys.length);
    expect(Number(await redis.get(`${params.probeKey}:posts`))).toBeGreaterThanOrEqual(1);
  });

  it('ParallelBatchNode: one job per item over several processes, retries with backoff per item, own try index, results in item order', async () => {
    const list = Array.from({ length: 24 }, (_, i) => i); // more items than one worker's 8 slots
    const params = probeParams();
    const result = await engine.run<Shared>(items, { items: list }, { params });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    const results = result.shared.results as { item: number; attempt: number; pid: number }[];
    // Item order, and each item succeeded on its own try index (item n fails n % 3 tries first).
    expect(results.map((r) => [r.item, r.attempt])).toEqual(list.map((n) => [n, n % 3]));
    const used = new Set(results.map((r) => r.pid));
    expect(used.size, `items ran on pids ${[...used].join(', ')}`).toBeGreaterThan(1);
    for (const pid of used) expect(workerPids()).toContain(pid);

    const tries = (await redis.lrange(`${params.probeKey}:tries`, 0, -1)).map(
      (entry) => JSON.parse(entry) as { item: number; attempt: number; at: number; pid: number },
    );
    for (const n of list) {
      // The first start of each try of this item. A try's code may run again when its worker loses
      // the job's lock (node code at least once, DESIGN "Steps"); its outcome is committed once.
      const firstStarts = new Map<number, number>();
      for (const t of tries.filter((each) => each.item === n))
        firstStarts.set(t.attempt, Math.min(t.at, firstStarts.get(t.attempt) ?? Infinity));
      // Every try, numbered 0, 1, … for this item alone.
      expect(
        [...firstStarts.keys()].sort((a, b) => a - b),
        `tries of item ${n}`,
      ).toEqual(Array.from({ length: (n % 3) + 1 }, (_, i) => i));
      // Backoff: exponential from `wait` (50 ms, then 100 ms); a retry never comes before its delay.
      for (let k = 1; k < firstStarts.size; k++) {
        expect(
          firstStarts.get(k)! - firstStarts.get(k - 1)!,
          `delay before try ${k} of item ${n}`,
        ).toBeGreaterThanOrEqual(ITEM_TRIES.waitMs * 2 ** (k - 1));
      }
    }
    // The failed tries are on the run, each with its item's own try index.
    const info = await engine.get(result.id);
    const failed = info!.errors.map((e) => [e.message, e.attempt]);
    const expected = list.flatMap((n) => Array.from({ length: n % 3 }, (_, k) => [`item ${n} fails try ${k}`, k]));
    expect(failed).toHaveLength(expected.length);
    expect(failed).toEqual(expect.arrayContaining(expected));
  });

  it('ParallelBatchFlow concurrency 3: at most 3 children in flight across all workers, and 3 reached', async () => {
    const keys = range(24);
    const params = probeParams();
    const result = await engine.run<Shared>(limitedFlow, { keys }, { params });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(Object.keys(result.shared.pids as object)).toHaveLength(keys.length);
    expect(Number(await redis.get(`${params.probeKey}:max`))).toBe(LIMIT);
    expect(await redis.get(`${params.probeKey}:now`)).toBe('0');
    for (const pid of Object.values(result.shared.pids as Record<string, number>)) expect(workerPids()).toContain(pid);
  });

  it('ParallelBatchNode concurrency 3: at most 3 items in flight across all workers, and 3 reached', async () => {
    const keys = range(24);
    const params = probeParams();
    const result = await engine.run<Shared>(limitedNode, { keys }, { params });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.pids).toHaveLength(keys.length);
    expect(Number(await redis.get(`${params.probeKey}:max`))).toBe(LIMIT);
    expect(await redis.get(`${params.probeKey}:now`)).toBe('0');
    for (const pid of result.shared.pids as number[]) expect(workerPids()).toContain(pid);
  });
});
