/**
 * Issue 30, item 5: workers wait for Redis. A `queueflow worker` started while nothing listens
 * on its Redis port used to exit with ECONNREFUSED; it now waits, trying again after 0.5 s, 1 s,
 * 2 s... (at most 10 s apart) with one log line per wait, and runs its first step once a
 * redis-server comes up on that port. (`--exit-on-unreachable` keeps the old behaviour, and clients
 * still fail at once: tests/cli/cli.int.test.ts, "an unreachable --redis".)
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { freePort, startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { startWorkerProcess, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { countdown, countdownShared, oneTo } from '../fault/fault-flows.js';

const FLOWS = fileURLToPath(new URL('../fault/fault-flows.ts', import.meta.url));

describe('a worker started before Redis', () => {
  const workers: WorkerProcess[] = [];
  const opened: { close(): Promise<void> }[] = [];
  let server: LocalRedisServer | undefined;

  afterAll(async () => {
    for (const engine of opened) await engine.close();
    await stopWorkers(workers);
    await server?.stop();
  });

  it('waits with backoff, one line per wait, and runs its first step once Redis comes up', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const prefix = testPrefix('wait-redis');
    const worker = startWorkerProcess({ flows: FLOWS, redisUrl: url, prefix });
    workers.push(worker);
    // Two waits (0.5 s, then 1 s) before Redis comes up.
    await worker.printed('trying again in 1 s (try 2)');
    server = await startRedisServer({ port });
    const engine = new RedisEngine({ connection: url, flows: [countdown], prefix });
    opened.push(engine);
    const result = await engine.run(countdown, countdownShared(2));
    expect(result).toMatchObject({ status: 'completed', shared: { seen: oneTo(2) } });
    await worker.printed(': ready');

    const waits = worker
      .output()
      .split('\n')
      .map(messageOf)
      .filter((line) => line.includes('trying again'));
    const reason = `Redis at ${url} is unreachable \\(connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)`;
    waits.forEach((line, i) =>
      expect(line).toMatch(
        new RegExp(
          `^queueflow worker ${worker.pid}: ${reason}; trying again in ${Math.min(0.5 * 2 ** i, 10)} s \\(try ${i + 1}\\)$`,
        ),
      ),
    );
    expect(waits.length).toBeGreaterThanOrEqual(2);
  });
});

/** The text of a log line: a JSON line's `msg` (pino, the worker's format without a terminal), else the line. */
function messageOf(line: string): string {
  try {
    return (JSON.parse(line) as { msg?: string }).msg ?? line;
  } catch {
    return line;
  }
}
