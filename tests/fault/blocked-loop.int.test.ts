/**
 * A worker whose main event loop is blocked by a synchronous step (README "Busy is not dead"):
 * its heartbeat thread keeps it live and reports the loop's lag, which `engine.workers()` and
 * `queueflow workers` show, and nobody takes it over.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { queueflow } from '../cli/cli-harness.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { blockLoop } from './fault-flows.js';

const FLOWS = fileURLToPath(new URL('./fault-flows.ts', import.meta.url));

describe('fault: a worker whose main loop a step blocks', () => {
  const prefix = testPrefix('blocked-loop');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [blockLoop], prefix });
  let workers: WorkerProcess[] = [];
  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
  });

  it('stays live, shows its main loop blocked, and completes the step', async () => {
    workers = [await spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix })];
    const handle = await engine.start(blockLoop, {}, { params: { blockMs: 6000 } });
    const blocked = await waitFor(
      'the worker to report its main loop blocked',
      async () => (await engine.workers()).find((worker) => (worker.loopLagMs ?? 0) >= 1500),
      { timeoutMs: 8000 },
    );
    expect(blocked!.id).toContain(`:${workers[0]!.pid}:`);
    const listed = await queueflow(['workers', '--redis', redisUrl(), '--prefix', prefix]);
    expect(listed.stdout).toMatch(/main loop blocked \d+(\.\d)? s/);
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(workers[0]!.output()).not.toContain('fenced:');
  }, 60_000);
});
