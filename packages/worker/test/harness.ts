/**
 * Shared set-up of the RedisEngine contract tests: one key prefix per test, an engine, in-process
 * workers and a plain Redis connection to inspect keys, all closed and deleted after the test.
 * Node code runs in this process (in-process workers), so tests observe it through plain
 * module-level state: {@link gate} and {@link Tally}.
 */
import { afterEach } from 'vitest';
import { Redis } from 'ioredis';
import type { FlowDefinition, RunInfo } from '@queueflow/runtime';
import {
  RedisEngine,
  RedisKeys,
  startWorker,
  type QueueflowWorker,
  type RedisEngineOptions,
  type WorkerOptions,
} from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';
import { waitFor } from '../../../tests/support/wait-for.js';

export interface Harness {
  url: string;
  prefix: string;
  keys: RedisKeys;
  engine: RedisEngine;
  /** A plain connection for inspecting keys (TTL, SCAN, HGET). */
  redis: Redis;
  /** Starts an in-process worker on this prefix (closed after the test unless closed before). */
  worker(options?: Partial<WorkerOptions>): Promise<QueueflowWorker>;
  /** Another engine client on this prefix (closed after the test). */
  client(options?: Partial<RedisEngineOptions>): RedisEngine;
  /** Polls `engine.get(runId)` until `condition` holds; returns that info. */
  until(runId: string, what: string, condition: (info: RunInfo) => boolean, timeoutMs?: number): Promise<RunInfo>;
  /** Every key under the prefix. */
  scanKeys(): Promise<string[]>;
}

export interface HarnessOptions {
  /** Flows the engine client knows. */
  flows: FlowDefinition[];
  /** In-process workers to start now with `flows`. @defaultValue 1 */
  workers?: number;
  /** Concurrency of those workers. @defaultValue 4 */
  concurrency?: number;
  /** Redis URL (e.g. with another db). @defaultValue the suite's Redis */
  url?: string;
  /** Extra options for the workers started now. */
  workerOptions?: Partial<WorkerOptions>;
  /** Extra options for the engine. */
  engineOptions?: Partial<RedisEngineOptions>;
}

/** Call at the top of a test file: returns `setup`, which builds a {@link Harness} for one test. */
export function useHarness(): (name: string, options: HarnessOptions) => Promise<Harness> {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });

  return async (name, options) => {
    const url = options.url ?? redisUrl();
    const prefix = testPrefix(name);
    const keys = new RedisKeys(prefix);
    const redis = new Redis(url, { maxRetriesPerRequest: 1 });
    redis.on('error', () => {});
    cleanups.push(async () => {
      await deletePrefix(url, prefix);
      redis.disconnect();
    });
    const worker = async (extra: Partial<WorkerOptions> = {}): Promise<QueueflowWorker> => {
      const started = await startWorker({
        connection: url,
        flows: options.flows,
        prefix,
        concurrency: options.concurrency ?? 4,
        onError: () => {},
        ...options.workerOptions,
        ...extra,
      });
      cleanups.push(() => started.close());
      return started;
    };
    const client = (extra: Partial<RedisEngineOptions> = {}): RedisEngine => {
      const created = new RedisEngine({ connection: url, flows: options.flows, prefix, ...options.engineOptions, ...extra });
      cleanups.push(() => created.close());
      return created;
    };
    const engine = client();
    for (let i = 0; i < (options.workers ?? 1); i++) await worker();
    return {
      url,
      prefix,
      keys,
      engine,
      redis,
      worker,
      client,
      until: (runId, what, condition, timeoutMs = 15_000) =>
        waitFor(
          what,
          async () => {
            const info = await engine.get(runId);
            return info && condition(info) ? info : undefined;
          },
          { timeoutMs },
        ),
      scanKeys: async () => {
        const found: string[] = [];
        let cursor = '0';
        do {
          const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
          cursor = next;
          found.push(...batch);
        } while (cursor !== '0');
        return found;
      },
    };
  };
}

/** A promise the test opens when it wants node code to go on. */
export interface Gate {
  promise: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Counts and records what node code did, by key (a token in `shared` or params). */
export class Tally<T = unknown> {
  private readonly entries = new Map<string, T[]>();

  add(key: string, value: T): void {
    const list = this.entries.get(key) ?? [];
    list.push(value);
    this.entries.set(key, list);
  }

  of(key: string): T[] {
    return this.entries.get(key) ?? [];
  }

  count(key: string): number {
    return this.of(key).length;
  }
}

/** Resolves when `signal` aborts, with its reason. */
export function aborted(signal: AbortSignal | undefined): Promise<unknown> {
  if (!signal) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

/** Rejects with `message` if `promise` has not settled after `ms` (only the failure path waits). */
export async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
