import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { countdown, countdownShared, oneTo } from './fault-flows.js';

const FLOWS = fileURLToPath(new URL('./fault-flows.ts', import.meta.url));

describe('fault: restart Redis (AOF, appendfsync always) in the middle of runs', () => {
  const prefix = testPrefix('restart');
  let server: LocalRedisServer;
  let workers: WorkerProcess[] = [];
  let engine: RedisEngine;

  beforeAll(async () => {
    server = await startRedisServer({ appendOnly: true });
    engine = new RedisEngine({ connection: server.url, flows: [countdown], prefix });
  });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await server.stop();
  });

  it('completes every run once Redis is back, each step committed once', async () => {
    const options = { flows: FLOWS, redisUrl: server.url, prefix, concurrency: 4 };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    const handles = await Promise.all(
      [0, 1, 2].map(() => engine.start(countdown, countdownShared(60), { params: { execMs: 10 } })),
    );
    const results = handles.map((handle) => handle.result());

    await waitFor('the runs to pass step 15', async () => ((await engine.get(handles[0]!.id))?.steps ?? 0) >= 15);
    await server.kill();
    // Redis is down for a moment: workers and the client keep retrying their connections.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await server.restart();

    for (const result of await Promise.all(results)) {
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      expect(result.shared.seen).toEqual(oneTo(60));
    }
  }, 120_000);
});
