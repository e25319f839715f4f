/**
 * Fault: Redis restarted (AOF, appendfsync always) while runs wait on a rate budget. The budget's
 * window is in Redis, so after the restart it resumes where it was: every run completes, and no
 * sliding window of exec times holds more than one window's worth beyond `rate.max` (exec times
 * are taken in the worker a moment after admission, so a window of them may hold one or two more
 * than `max` even without a restart; a budget that forgot its window would admit a whole `max` more).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { PACED_RATE, paced } from './limits-flows.js';

const FLOWS = fileURLToPath(new URL('./limits-flows.ts', import.meta.url));
const RUNS = 30;

describe('fault: restart Redis while runs wait on a rate budget', () => {
  const prefix = testPrefix('restart-budget');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-restart-budget-'));
  let server: LocalRedisServer;
  let workers: WorkerProcess[] = [];
  let engine: RedisEngine;
  const execs = (): number[] =>
    readFileSync(join(markerDir, 'execs'), { encoding: 'utf8', flag: 'a+' }).split('\n').filter(Boolean).map(Number);

  beforeAll(async () => {
    server = await startRedisServer({ appendOnly: true });
    engine = new RedisEngine({ connection: server.url, flows: [paced], prefix });
  });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await server.stop();
    rmSync(markerDir, { recursive: true, force: true });
  });

  it('resumes the budget: every run completes, no window admits a whole window more', async () => {
    const options = { flows: FLOWS, redisUrl: server.url, prefix, concurrency: 4 };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    const handles = await Promise.all(
      Array.from({ length: RUNS }, () => engine.start(paced, {}, { params: { markerDir } })),
    );
    const results = handles.map((handle) => handle.result());

    await waitFor('ten execs', () => execs().length >= 10);
    await server.kill();
    // Redis is down for a moment: workers and the client keep retrying their connections.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await server.restart();

    for (const result of await Promise.all(results)) expect(result.status).toBe('completed');
    const at = execs().sort((a, b) => a - b);
    expect(at).toHaveLength(RUNS);
    for (const start of at) {
      const inWindow = at.filter((t) => t >= start && t < start + PACED_RATE.perMs).length;
      expect(inWindow).toBeLessThan(2 * PACED_RATE.max);
    }
  }, 120_000);
});
