/**
 * Issue 18, item 3: on the suite's 3-master cluster, with 16 partitions, a fan-out child's end is
 * a two-sided hand-off (its commit in the child's partition, then child-ended.lua in its
 * parent's). A `queueflow worker` is SIGKILLed between the two sides (die-between-child-sides.ts,
 * preloaded): the child has ended, its parent has not heard. The child's task comes back to the
 * survivor (a stalled job, or a taken task of the dead worker), finds the child ended and reports
 * it: the parent completes, each child's end applied once and its result merged once.
 */
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { childRunId } from '@queueflow/runtime/kernel';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix } from '../support/redis-prefix.js';
import { redisClusterUrls, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { LANES, handoffLanes } from './handoff-flows.js';

const FLOWS = fileURLToPath(new URL('./handoff-flows.ts', import.meta.url));
const DIE = fileURLToPath(new URL('./die-between-child-sides.ts', import.meta.url));
const PARTITIONS = 16;

describe('fault: SIGKILL between the two sides of a child’s end', () => {
  const prefix = testPrefix('handoff-kill');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-handoff-kill-'));
  const connection = { cluster: redisClusterUrls() };
  const engine = new RedisEngine({ connection, flows: [handoffLanes], prefix, partitions: PARTITIONS });
  const workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers, 10_000);
    await deletePrefix(connection, prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  it('the survivor reports the ended child: the parent completes, every child merged once', async () => {
    const spawned = await Promise.all(
      [0, 1].map(() =>
        spawnWorker({
          flows: FLOWS,
          redisUrl: redisUrl(),
          cluster: redisClusterUrls(),
          partitions: PARTITIONS,
          prefix,
          concurrency: 2,
          lockDurationMs: 1000,
          stalledIntervalMs: 500,
          preload: DIE,
          env: { QF_MARKER_DIR: markerDir },
        }),
      ),
    );
    workers.push(...spawned);
    const run = await engine.start(handoffLanes, {});

    const markerFile = join(markerDir, 'died-between');
    const died = await waitFor('a worker to die between the two sides', () =>
      existsSync(markerFile) ? readFileSync(markerFile, 'utf8') : undefined,
    );
    const { pid, parentId, index } = JSON.parse(died) as { pid: number; parentId: string; index: number };
    expect(parentId).toBe(run.id);
    const victim = workers.find((worker) => worker.pid === pid);
    expect(victim, `the worker that died (pid ${pid})`).toBeDefined();
    expect(await victim!.exited).toBe('SIGKILL');

    const result = await run.result({ timeoutMs: 60_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect([...(result.shared as { done: number[] }).done].sort((a, b) => a - b)).toEqual(
      Array.from({ length: LANES }, (_, i) => i),
    );
    const children = await engine.children(run.id, { limit: LANES });
    expect(children.map((child) => child.status)).toEqual(Array.from({ length: LANES }, () => 'completed'));
    // The child whose end was cut in two: ended in its partition before its parent heard of it.
    expect((await engine.get(childRunId(run.id, 1, index)))?.status).toBe('completed');
  }, 120_000);
});
