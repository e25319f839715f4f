/**
 * Issue 11, "Done when": a run that fails at step 3 of 5 because of a bug, fixed and deployed to
 * new workers, completes when retried, without running steps 1–2 again. Real worker processes: the
 * first ones run the code with the bug (`QF_OPS_BUG=1`, see ops-flows.ts), are stopped, and new
 * ones start with the fixed code, whose graph (and fingerprint) is the same.
 *
 * `queueflow retry <run>` is not in the CLI yet: the retry goes through `engine.retry`.
 */
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { opsFive } from './ops-flows.js';

const FLOWS = fileURLToPath(new URL('./ops-flows.ts', import.meta.url));

describe('retry after a fix is deployed to new worker processes', () => {
  const prefix = testPrefix('ops-retry');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-ops-retry-'));
  const engine = new RedisEngine({ connection: redisUrl(), flows: [opsFive], prefix });
  const started: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    await stopWorkers(started);
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  /** Pids of the processes whose exec ran `node`, one per exec call. */
  const ranOn = (node: string): number[] => {
    const file = join(markerDir, node);
    return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map(Number) : [];
  };
  const spawn = async (env: NodeJS.ProcessEnv): Promise<WorkerProcess[]> => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 2, env };
    const workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    started.push(...workers);
    return workers;
  };

  it('fails at step 3 on the buggy workers; retried on the fixed ones, it completes without rerunning steps 1–2', async () => {
    const buggy = await spawn({ QF_OPS_BUG: '1' });
    const buggyPids = buggy.map((worker) => worker.pid);
    const failed = await engine.run(opsFive, { visited: [] }, { params: { markerDir } });
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ node: 's3', message: 'bug in s3 (the code deployed first)' });
    expect(failed.shared.visited).toEqual(['s1', 's2']);
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed', steps: 2 });
    expect(['s1', 's2', 's3', 's4', 's5'].map((node) => ranOn(node).length)).toEqual([1, 1, 1, 0, 0]);

    // The fix is deployed: the buggy workers stop, workers with the fixed code start.
    await stopWorkers(buggy);
    const fixed = await spawn({ QF_OPS_BUG: '0' });
    const fixedPids = fixed.map((worker) => worker.pid);

    const handle = await engine.retry(failed.id);
    expect(handle.id).toBe(failed.id);
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.visited).toEqual(['s1', 's2', 's3', 's4', 's5']);

    // Steps 1–2 ran once, on the buggy workers; step 3 again, and 4–5, on the fixed ones.
    expect(['s1', 's2', 's3', 's4', 's5'].map((node) => ranOn(node).length)).toEqual([1, 1, 2, 1, 1]);
    for (const node of ['s1', 's2']) expect(buggyPids).toContain(ranOn(node)[0]);
    expect(buggyPids).toContain(ranOn('s3')[0]);
    for (const node of ['s3', 's4', 's5']) expect(fixedPids).toContain(ranOn(node).at(-1));

    const info = await engine.get(failed.id);
    expect(info).toMatchObject({ status: 'completed', steps: 5, retries: 1 });
    expect(info?.refusal).toBeUndefined(); // same graph, same fingerprint: no worker refused a step
    expect(info?.errors.map((e) => [e.node, e.message])).toEqual([['s3', 'bug in s3 (the code deployed first)']]);
    const history = await engine.history(failed.id);
    expect(history.map((record) => record.node)).toEqual(['s1', 's2', 's3', 's4', 's5']);
    const pidOf = (worker: string | undefined): number => Number(worker?.split(':')[1]);
    expect(history.map((record) => pidOf(record.worker)).map((pid) => fixedPids.includes(pid))).toEqual([
      false,
      false,
      true,
      true,
      true,
    ]);
  }, 120_000);
});
