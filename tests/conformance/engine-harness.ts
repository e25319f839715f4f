/**
 * The engine factory of the conformance suite (langgraphjs: one spec suite every backend runs).
 * Each contract scenario is written once, inside `describe.each(engines)`, and runs on LocalEngine
 * and on RedisEngine: `useEngine(name)` returns a `setup` that opens one engine for one test and
 * closes it afterwards (RedisEngine: under a key prefix of its own, deleted afterwards, with
 * in-process workers).
 *
 * Node code runs in the test's process on both engines, so tests observe and steer it through
 * module-level probes (tests/support/node-probes.ts), keyed by a token per test and engine.
 *
 * Time: LocalEngine runs on a {@link FakeClock} the test moves on (retry delays are timers on it);
 * RedisEngine on real time (BullMQ's delayed set), which {@link EngineHarness.advance} waits out.
 */
import { afterEach } from 'vitest';
import { LocalEngine, type AgentDefinition, type Engine, type FlowDefinition, type RunInfo } from '@queueflow/runtime';
import { useRedisHarness, type RedisHarness } from '../support/redis-harness.js';
import { untilRun, waitFor } from '../support/wait-for.js';
import { FakeClock } from './fake-clock.js';

/** `RedisCluster` is RedisEngine on the suite's 3-master Redis Cluster. */
export const engines = ['LocalEngine', 'RedisEngine', 'RedisCluster'] as const;
export type EngineName = (typeof engines)[number];

export interface EngineSetup {
  /** Flows the engine (and RedisEngine's workers) know. */
  flows: FlowDefinition[];
  /** Agent types the engine (and RedisEngine's workers) know. */
  agents?: AgentDefinition<any>[];
  /**
   * Steps run at once: LocalEngine's `concurrency`; on RedisEngine, that of each in-process
   * worker. @defaultValue 4
   */
  concurrency?: number;
  /**
   * RedisEngine: in-process workers started now (0: no step is taken, nothing but the engine
   * touches Redis). LocalEngine takes its steps itself. @defaultValue 1
   */
  workers?: number;
  /**
   * LocalEngine: its clock jumps to each timer as soon as it is set, so runs wait out their retry
   * delays without the test's help (the delays are still read back from the clock).
   * @defaultValue false
   */
  autoAdvance?: boolean;
  /**
   * Step records kept per run: LocalEngine's `maxStepRecords`; on RedisEngine, that of the
   * workers (they commit the steps, and with them the records) and of the engine.
   * @defaultValue the engine's (10000)
   */
  maxStepRecords?: number;
  /**
   * RedisEngine: how long a finished run is kept, in ms (`retentionMs` of the workers, which end
   * runs, and of the engine). LocalEngine keeps finished runs by count: see
   * `retainFinishedRuns`. @defaultValue the engine's (7 days)
   */
  retentionMs?: number;
  /** LocalEngine's `retainFinishedRuns` (RedisEngine keeps runs by time: `retentionMs`). @defaultValue the engine's */
  retainFinishedRuns?: number;
  /** `largeValueBytes` of the engine (and of RedisEngine's workers). @defaultValue the engine's (256 KiB) */
  largeValueBytes?: number;
}

export interface EngineHarness {
  /** The engine's name; `RedisCluster` is a RedisEngine (on a Redis Cluster). */
  name: EngineName;
  engine: Engine;
  /** Polls `engine.get(runId)` until `condition` holds; returns that info. */
  until(runId: string, what: string, condition: (info: RunInfo) => boolean, timeoutMs?: number): Promise<RunInfo>;
  /**
   * Lets `ms` of the engine's time pass: LocalEngine's clock moves on (its timers that fall due
   * fire); on RedisEngine, `ms` real milliseconds go by.
   */
  advance(ms: number): Promise<void>;
  /**
   * What the engine holds, as names: RedisEngine, every key under the test's prefix; LocalEngine,
   * the ids of its runs.
   */
  stored(): Promise<string[]>;
  /**
   * Waits until no task of the engine is running (LocalEngine: its scheduler's active tasks;
   * RedisEngine: BullMQ's active list of the step queue), e.g. until a cancelled step's task has
   * gone, so that what the test does next cannot meet it.
   */
  idle(): Promise<void>;
  /**
   * Ids of the child runs of a fan-out parent (`info` from `get`): both engines leave them out of
   * `list` and name them `<parent id>.<parent step>.<index>` (fan-out.lua, LocalEngine.createRun).
   */
  childRuns(parent: RunInfo): Promise<string[]>;
  /** LocalEngine only: its clock, to read the delays asked for and to move time on. */
  clock?: FakeClock;
  /** RedisEngine only: keys, the inspecting connection, more workers and clients. */
  redis?: RedisHarness;
}

export interface LocalHarness extends EngineHarness {
  name: 'LocalEngine';
  engine: LocalEngine;
  clock: FakeClock;
}

/** Call inside `describe.each(engines)`: returns `setup`, which opens `name` for one test. */
export function useEngine(name: EngineName): (test: string, options: EngineSetup) => Promise<EngineHarness> {
  return name === 'LocalEngine' ? useLocalEngine() : useRedisEngine(name === 'RedisCluster');
}

/** LocalEngine on a {@link FakeClock}, closed after the test. */
export function useLocalEngine(): (test: string, options: EngineSetup) => Promise<LocalHarness> {
  const opened: LocalEngine[] = [];
  afterEach(async () => {
    for (const engine of opened.splice(0)) await engine.close();
  });
  return async (_test, options) => {
    const clock = new FakeClock({ autoAdvance: options.autoAdvance ?? false });
    const engine = new LocalEngine({
      flows: options.flows,
      ...(options.agents ? { agents: options.agents } : {}),
      clock,
      concurrency: options.concurrency ?? 4,
      ...(options.retainFinishedRuns === undefined ? {} : { retainFinishedRuns: options.retainFinishedRuns }),
      ...(options.maxStepRecords === undefined ? {} : { maxStepRecords: options.maxStepRecords }),
      ...(options.largeValueBytes === undefined ? {} : { largeValueBytes: options.largeValueBytes }),
    });
    opened.push(engine);
    return {
      name: 'LocalEngine',
      engine,
      clock,
      until: (runId, what, condition, timeoutMs) => untilRun(engine, runId, what, condition, timeoutMs),
      advance: async (ms) => clock.advance(ms),
      stored: async () => (await engine.list()).map((info) => info.id),
      idle: async () => {
        await waitFor('no task to be running', async () => (await engine.workers())[0]!.active === 0);
      },
      childRuns: async (parent) => childRunIds(parent),
    };
  };
}

/**
 * RedisEngine with in-process workers under a key prefix of the test's own, on the suite's Redis
 * or (`cluster`) its Redis Cluster.
 */
function useRedisEngine(cluster: boolean): (test: string, options: EngineSetup) => Promise<EngineHarness> {
  const setup = useRedisHarness();
  return async (test, options) => {
    const store = {
      ...(options.maxStepRecords === undefined ? {} : { maxStepRecords: options.maxStepRecords }),
      ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
      ...(options.largeValueBytes === undefined ? {} : { largeValueBytes: options.largeValueBytes }),
      ...(options.agents ? { agents: options.agents } : {}),
    };
    const redis = await setup(test, {
      flows: options.flows,
      ...(options.workers === undefined ? {} : { workers: options.workers }),
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      workerOptions: store,
      engineOptions: store,
      cluster,
    });
    return {
      name: cluster ? 'RedisCluster' : 'RedisEngine',
      engine: redis.engine,
      redis,
      until: redis.until,
      advance: async (ms) => {
        const end = Date.now() + ms;
        await waitFor(`${ms} ms to pass`, () => Date.now() >= end, { intervalMs: 1 });
      },
      stored: redis.scanKeys,
      idle: async () => {
        const actives = redis.partitions.all.map((keys) => `${keys.prefix}:${keys.stepQueue}:active`);
        await waitFor('no step job to be active', async () =>
          (await Promise.all(actives.map((key) => redis.connection.llen(key)))).every((count) => count === 0),
        );
      },
      childRuns: async (parent) => childRunIds(parent),
    };
  };
}

function childRunIds(parent: RunInfo): string[] {
  return Array.from({ length: parent.children?.total ?? 0 }, (_, i) => `${parent.id}.${parent.steps}.${i}`);
}
