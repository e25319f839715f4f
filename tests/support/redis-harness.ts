/**
 * Set-up of a test on RedisEngine: one key prefix per test, an engine, in-process workers and a
 * plain Redis connection to inspect keys, all closed and deleted after the test. Node code runs in
 * this process (in-process workers), so tests observe it through plain module-level state
 * (node-probes.ts). The conformance suite's engine factory builds on it (tests/conformance).
 */
import { afterEach } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import type { FlowDefinition, RunInfo } from '@queueflow/runtime';
import {
  CLUSTER_PARTITIONS,
  Partitions,
  RedisEngine,
  startWorker,
  type RedisKeys,
  type QueueflowWorker,
  type RedisEngineOptions,
  type WorkerOptions,
} from '@queueflow/worker';
import { inspectingConnection, keysUnder, type RedisWhere } from './redis-prefix.js';
import { deletePrefix, redisClusterUrls, redisUrl, testPrefix } from './test-redis.js';
import { untilRun } from './wait-for.js';

export interface RedisHarness {
  /** The suite's Redis URL, or its cluster's node URLs (`{ cluster }`): the engine's `connection`. */
  url: RedisWhere;
  prefix: string;
  /** Partition 0's keys (every key, on one server); a run's are `partitions.of(id)`'s. */
  keys: RedisKeys;
  /** The keys of each partition: 16 on the cluster (unless the engine is given another count), else 1. */
  partitions: Partitions;
  engine: RedisEngine;
  /** A plain connection for inspecting keys (TTL, SCAN, HGET); a Cluster on the cluster. */
  connection: Redis | Cluster;
  /** Starts an in-process worker on this prefix (closed after the test unless closed before). */
  worker(options?: Partial<WorkerOptions>): Promise<QueueflowWorker>;
  /** Another engine client on this prefix (closed after the test). */
  client(options?: Partial<RedisEngineOptions>): RedisEngine;
  /** Polls `engine.get(runId)` until `condition` holds; returns that info. */
  until(runId: string, what: string, condition: (info: RunInfo) => boolean, timeoutMs?: number): Promise<RunInfo>;
  /** Every key under the prefix. */
  scanKeys(): Promise<string[]>;
}

export interface RedisHarnessOptions {
  /** Flows the engine client knows. */
  flows: FlowDefinition[];
  /** In-process workers to start now with `flows`. @defaultValue 1 */
  workers?: number;
  /** Concurrency of those workers. @defaultValue 4 */
  concurrency?: number;
  /** Redis URL (e.g. with another db). @defaultValue the suite's Redis */
  url?: string;
  /** Run on the suite's Redis Cluster (3 masters) instead of its Redis. @defaultValue false */
  cluster?: boolean;
  /** Extra options for the workers started now. */
  workerOptions?: Partial<WorkerOptions>;
  /** Extra options for the engine. */
  engineOptions?: Partial<RedisEngineOptions>;
}

/**
 * Call at the top of a test file or `describe`: returns `setup`, which builds a
 * {@link RedisHarness} for one test under a prefix named after `name`.
 */
export function useRedisHarness(): (name: string, options: RedisHarnessOptions) => Promise<RedisHarness> {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });

  return async (name, options) => {
    const url: RedisWhere = options.cluster ? { cluster: redisClusterUrls() } : (options.url ?? redisUrl());
    const prefix = testPrefix(name);
    const partitions = new Partitions(
      prefix,
      options.engineOptions?.partitions ?? (options.cluster ? CLUSTER_PARTITIONS : 1),
    );
    const keys = partitions.home;
    const connection = inspectingConnection(url);
    cleanups.push(async () => {
      await deletePrefix(url, prefix);
      connection.disconnect();
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
      const created = new RedisEngine({
        connection: url,
        flows: options.flows,
        prefix,
        ...options.engineOptions,
        ...extra,
      });
      cleanups.push(() => created.close());
      return created;
    };
    const engine = client();
    for (let i = 0; i < (options.workers ?? 1); i++) await worker();
    return {
      url,
      prefix,
      keys,
      partitions,
      engine,
      connection,
      worker,
      client,
      until: (runId, what, condition, timeoutMs) => untilRun(engine, runId, what, condition, timeoutMs),
      scanKeys: () => keysUnder(connection, prefix),
    };
  };
}
