/**
 * Fault: a worker SIGKILLed while it holds a concurrency slot of a budget. Its lease lives only
 * as long as its heartbeat renews it, so the slot comes back (never a slot lost forever): the run
 * waiting for it, throttled, goes on, and the killed worker's own step is taken over.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { hog } from './limits-flows.js';

const FLOWS = fileURLToPath(new URL('./limits-flows.ts', import.meta.url));

describe('fault: SIGKILL the worker holding a concurrency slot', () => {
  const prefix = testPrefix('sigkill-budget');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-sigkill-budget-'));
  let workers: WorkerProcess[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [hog], prefix });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  it('gives the slot back: the throttled run goes on, the killed step is taken over', async () => {
    const options = {
      flows: FLOWS,
      redisUrl: redisUrl(),
      prefix,
      concurrency: 2,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    const holding = await engine.start(hog, {}, { params: { markerDir } });
    await waitFor('a worker to hold the slot', () => existsSync(join(markerDir, 'holder')));
    const pid = Number(readFileSync(join(markerDir, 'holder'), 'utf8'));

    const waiting = await engine.start(hog, {}, { params: { markerDir } });
    const throttled = await waitFor('the second run throttled', async () => {
      const info = await engine.get(waiting.id);
      return info?.status === 'throttled' ? info : undefined;
    });
    expect(throttled.throttledBy).toBe('slot');

    const victim = workers.find((w) => w.pid === pid);
    expect(victim, `the worker holding the slot (pid ${pid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');

    expect((await waiting.result()).status).toBe('completed');
    expect((await holding.result()).status).toBe('completed');
    for (const id of [waiting.id, holding.id]) expect((await engine.get(id))?.errors).toEqual([]);
  }, 120_000);
});
