/**
 * Set-up of a test file that SIGKILLs `queueflow worker` processes (tests/fault, tests/ops,
 * tests/routing): a key prefix, an engine client, a marker directory through which node code in
 * the worker processes tells the test what it did (the processes share nothing else), and the
 * processes the test spawns. After the file's tests: the engine closed, every process still
 * running killed (a graceful stop would wait for a hanging step), the prefix and the directory
 * deleted.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import type { FlowDefinition } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from './test-redis.js';
import { spawnWorker, type WorkerProcess, type WorkerProcessOptions } from './worker-process.js';

export interface KillHarness {
  prefix: string;
  markerDir: string;
  engine: RedisEngine;
  /** The text of marker file `name` in the marker directory, or undefined while there is none. */
  marker(name: string): string | undefined;
  /** Spawns worker processes on this prefix and the suite's Redis, loading `flows` (a module path). */
  spawn(count: number, options: Omit<WorkerProcessOptions, 'redisUrl' | 'prefix'>): Promise<WorkerProcess[]>;
}

/** Call at the top of a `describe`: one harness for the file's tests, cleaned up after them. */
export function useKillHarness(name: string, flows: FlowDefinition[]): KillHarness {
  const prefix = testPrefix(name);
  const markerDir = mkdtempSync(join(tmpdir(), `queueflow-${name}-`));
  const engine = new RedisEngine({ connection: redisUrl(), flows, prefix });
  const workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    for (const worker of workers)
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.exited));
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  return {
    prefix,
    markerDir,
    engine,
    marker: (file) => {
      const path = join(markerDir, file);
      return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    },
    spawn: async (count, options) => {
      const spawned = await Promise.all(
        Array.from({ length: count }, () => spawnWorker({ ...options, redisUrl: redisUrl(), prefix })),
      );
      workers.push(...spawned);
      return spawned;
    },
  };
}
