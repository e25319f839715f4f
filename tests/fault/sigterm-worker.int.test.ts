import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { countdown, countdownShared, oneTo } from './fault-flows.js';

const FLOWS = fileURLToPath(new URL('./fault-flows.ts', import.meta.url));

describe('fault: SIGTERM a worker in the middle of a step', () => {
  const prefix = testPrefix('sigterm');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-sigterm-'));
  const workers: WorkerProcess[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [countdown], prefix });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  it('finishes the step in flight, exits cleanly, and another worker completes the run', async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 1 };
    const first = await spawnWorker(options);
    workers.push(first);
    const handle = await engine.start(countdown, countdownShared(4), { params: { execMs: 1500, markerDir } });

    const marker = join(markerDir, 'current');
    await waitFor('the second step to start', () => existsSync(marker) && readFileSync(marker, 'utf8').endsWith(' 2'));
    first.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    // The step that was in flight was finished and committed before the worker left.
    const afterStop = await engine.get(handle.id);
    expect(afterStop?.steps).toBe(2);
    expect(afterStop?.shared.seen).toEqual([1, 2]);

    workers.push(await spawnWorker(options));
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.seen).toEqual(oneTo(4));
  }, 120_000);
});
