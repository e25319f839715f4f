/**
 * The store factory of the store conformance suite (langgraphjs' checkpoint-validation habit: one
 * spec suite every backend runs). Each spec is written once, inside `describe.each(stores)`, and
 * runs against MemoryRunStore and RedisRunStore: `useStore(name)` returns `open`, which gives a
 * fresh store for one test and closes it afterwards.
 *
 * - MemoryRunStore runs on a {@link FakeClock}; it is its own event source.
 * - RedisRunStore works under a key prefix of the test's own (deleted afterwards); its events
 *   come from RedisRunEvents over a subscriber connection opened on first use.
 *
 * Times the specs pass to the store (`now` fields) come from {@link StoreHarness.now}: each call
 * is one second later than the last, so "newest first" and "written at" are exact. Times a store
 * takes itself (loadForStep, park, cancel: the memory store's clock, Redis' `Date.now()`) are
 * only checked to be there.
 */
import { afterEach } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import type { ErrorRecord, Json, JsonObject, Message, RunError } from '@queueflow/runtime';
import {
  MemoryAgentStore,
  MemoryRunStore,
  type AgentStore,
  childRunId,
  encodeCheckpoint,
  encodeChildStart,
  encodeShared,
  type ChildEndReport,
  type ChildOutcome,
  type FanOutCommit,
  type NewRun,
  type FanOutRequest,
  type OutgoingMessage,
  type RunEventListener,
  type RunEventSource,
  type RunStore,
  type Runnable,
  type StepTarget,
  type StoredRun,
  wakeId,
} from '@queueflow/runtime/kernel';
import {
  CLUSTER_PARTITIONS,
  Partitions,
  RedisAgentStore,
  RedisRunEvents,
  RedisRunStore,
  StreamReader,
  withScripts,
} from '@queueflow/worker';
import { FakeClock } from '../conformance/fake-clock.js';
import { inspectingConnection, type RedisWhere } from '../support/redis-prefix.js';
import { deletePrefix, redisClusterUrls, redisUrl, testPrefix } from '../support/test-redis.js';

/** `RedisRunStore on a cluster` is RedisRunStore on the suite's 3-master Redis Cluster. */
export const stores = ['MemoryRunStore', 'RedisRunStore', 'RedisRunStore on a cluster'] as const;
export type StoreName = (typeof stores)[number];

/** Error records a store keeps per run (RunInfo: "the last 50"). */
export const MAX_ERRORS = 50;

/** The flow and graph fingerprint of the runs the builders make, and a worker that runs them. */
export const FLOW = 'flow';
export const FINGERPRINT = 'fp-1';
export const RUNNABLE: readonly Runnable[] = [[FLOW, FINGERPRINT]];

export interface StoreHarness {
  name: StoreName;
  store: RunStore;
  /** The agent store over the same store's mailboxes (an agent's inbox is the mailbox at its address). */
  agents: AgentStore;
  /** The store's event feed (the memory store itself; RedisRunEvents on Redis). */
  events(): RunEventSource;
  /** An epoch-ms time one second after the last one handed out, for `now` fields. */
  now(): number;
  /** A new run's record: a unique id, {@link FLOW}, {@link FINGERPRINT}, `now()`. */
  newRun(overrides?: Partial<NewRun>): NewRun;
  /** Creates a run and takes its first step (loadForStep by a worker that runs it): it is `running`. */
  started(overrides?: Partial<NewRun>): Promise<StoredRun>;
  /** Creates a run and returns its record (`queued`). */
  created(overrides?: Partial<NewRun>): Promise<StoredRun>;
  /** The run's record; fails the test when there is none. */
  load(runId: string): Promise<StoredRun>;
  /**
   * Lets `ms` of the store's own clock pass (what it stamps itself: budget windows and leases):
   * the memory store's fake clock moves on; Redis' server clock cannot be moved, so `ms` real
   * milliseconds go by.
   */
  elapse(ms: number): Promise<void>;
}

/** Store settings a spec may change. */
export interface StoreSettings {
  /** Stream entries kept per run. @defaultValue 10000 */
  maxStreamEntries?: number;
}

/** Call inside `describe.each(stores)`: returns `open`, which opens store `name` for one test. */
export function useStore(name: StoreName): (settings?: StoreSettings) => Promise<StoreHarness> {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return async (settings = {}) => {
    const opened =
      name === 'MemoryRunStore'
        ? openMemory(settings)
        : await openRedis(cleanups, settings, name === 'RedisRunStore' ? redisUrl() : { cluster: redisClusterUrls() });
    return { ...withBuilders(name, opened.store, opened.events, opened.elapse), agents: opened.agents };
  };
}

function openMemory(settings: StoreSettings): {
  store: RunStore;
  agents: AgentStore;
  events: () => RunEventSource;
  elapse: (ms: number) => Promise<void>;
} {
  const clock = new FakeClock();
  const store = new MemoryRunStore(clock, 10_000, 10_000, settings.maxStreamEntries);
  return {
    store,
    agents: new MemoryAgentStore(store, clock, store),
    events: () => store,
    elapse: async (ms) => clock.advance(ms),
  };
}

async function openRedis(
  cleanups: (() => Promise<void>)[],
  settings: StoreSettings,
  url: RedisWhere,
): Promise<{
  store: RunStore;
  agents: AgentStore;
  events: () => RunEventSource;
  elapse: (ms: number) => Promise<void>;
}> {
  // On the cluster, a store of 16 partitions (issue 18): mailboxes mostly in another partition than
  // the runs that use them, and runs spread over the masters.
  const partitions = new Partitions(testPrefix('store'), typeof url === 'string' ? 1 : CLUSTER_PARTITIONS);
  const keys = partitions.home;
  const redis = inspectingConnection(url);
  let subscriber: Redis | Cluster | undefined;
  let events: RedisRunEvents | undefined;
  // Blocking stream reads wait on one connection of their own, as on RedisEngine.
  const reader = new StreamReader(() => inspectingConnection(url), redis);
  cleanups.push(async () => {
    await reader.close();
    await subscriber?.quit().catch(() => {});
    await deletePrefix(url, keys.prefix);
    await redis.quit().catch(() => {});
  });
  // The store stamps its own transitions on the clock the specs stamp theirs on.
  const store = new RedisRunStore(
    withScripts(redis),
    partitions,
    {
      retentionSeconds: 3600,
      maxErrors: MAX_ERRORS,
      maxStepRecords: 10_000,
      ...(settings.maxStreamEntries === undefined ? {} : { maxStreamEntries: settings.maxStreamEntries }),
    },
    new FakeClock(),
    reader,
  );
  return {
    store,
    // A blocking wait (awaitMessage) opens a connection of its own, closed when it ends.
    agents: new RedisAgentStore(withScripts(redis), partitions, () => inspectingConnection(url), 3600),
    // The server's clock goes on by itself: the only way to let its time pass is to wait.
    elapse: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    events: () => {
      if (!events) {
        subscriber = inspectingConnection(url);
        events = new RedisRunEvents(subscriber, keys.events());
      }
      return events;
    },
  };
}

function withBuilders(
  name: StoreName,
  store: RunStore,
  events: () => RunEventSource,
  elapse: (ms: number) => Promise<void>,
): Omit<StoreHarness, 'agents'> {
  let time = Date.UTC(2025, 0, 1);
  let runs = 0;
  const now = (): number => (time += 1000);
  const newRun = (overrides: Partial<NewRun> = {}): NewRun => {
    const n = ++runs;
    return {
      id: `run-${n}`,
      flow: FLOW,
      fingerprint: FINGERPRINT,
      checkpoint: checkpoint({ n }),
      target: target('first'),
      now: now(),
      ...overrides,
    };
  };
  const load = async (runId: string): Promise<StoredRun> => {
    const run = await store.load(runId);
    if (!run) throw new Error(`run '${runId}' is not in the ${name}`);
    return run;
  };
  return {
    name,
    store,
    events,
    now,
    newRun,
    load,
    elapse,
    async created(overrides) {
      const run = newRun(overrides);
      await store.create(run);
      return load(run.id);
    },
    async started(overrides) {
      const run = newRun(overrides);
      await store.create(run);
      const loaded = await store.loadForStep(run.id, [[run.flow, run.fingerprint]]);
      if (loaded?.status !== 'running') throw new Error(`run '${run.id}' did not start: ${loaded?.status}`);
      return loaded;
    },
  };
}

/** An encoded whole checkpoint with `shared` and no frames. */
export function checkpoint(shared: JsonObject, lastAction?: string): string {
  return encodeCheckpoint({ shared, frames: [], ...(lastAction === undefined ? {} : { lastAction }) }, Infinity);
}

export function target(node: string, maxAttempts = 1): StepTarget {
  return { node, maxAttempts };
}

export function message(id: string, body: JsonObject = { id }): Message {
  return { id, body, sentAt: Date.UTC(2025, 0, 1) };
}

export function errorRecord(message: string, extra: Partial<ErrorRecord> = {}): ErrorRecord {
  return { name: 'Error', message, retryable: true, ...extra };
}

/** Fan-out shapes the specs make: how many children, how many start now, the failure policy. */
export interface FanOutShape {
  total: number;
  /** Children started now (a concurrency cap below `total`): the window. @defaultValue total */
  startNow?: number;
  /** Children started together as ends make room (FanOutCommit.refill). @defaultValue 1 */
  refill?: number;
  /** @defaultValue 'collect' */
  onItemError?: FanOutRequest['onItemError'];
  /** The parent's `shared` when it fans out. @defaultValue `{ base: 1 }` */
  shared?: JsonObject;
  outbox?: OutgoingMessage[];
}

/**
 * A ParallelBatchFlow fan-out commit (`runs`), as the fan-out driver builds it: child `i`'s first
 * checkpoint is a delta (encodeChildStart) against the snapshot of the parent's `shared`.
 */
export function runsFanOut(h: StoreHarness, shape: FanOutShape): StagedFanOut {
  const { total, startNow = total, refill = 1, onItemError = 'collect', shared = { base: 1 }, outbox = [] } = shape;
  return {
    checkpoint: checkpoint({ ...shared, waiting: true }),
    target: { node: FLOW, maxAttempts: 1 },
    request: {
      kind: 'runs',
      flow: FLOW,
      start: 'child-start',
      params: [],
      concurrency: startNow < total ? startNow : undefined,
      onItemError,
    },
    snapshot: encodeShared(shared),
    total,
    startNow,
    window: startNow,
    refill,
    childTarget: target('child-start'),
    inputs: Array.from({ length: total }, (_, i) =>
      encodeChildStart([{ kind: 'child', flow: FLOW, params: { i }, node: 'child-start' }]),
    ),
    outbox,
    now: h.now(),
  };
}

/** A ParallelBatchNode fan-out commit (`items`): one item task per item. */
export function itemsFanOut(h: StoreHarness, items: Json[], shape: Omit<FanOutShape, 'total'> = {}): StagedFanOut {
  const total = items.length;
  const { startNow = total, refill = 1, onItemError = 'collect', shared = { base: 1 }, outbox = [] } = shape;
  return {
    checkpoint: checkpoint({ ...shared, waiting: true }),
    target: { node: 'batch', maxAttempts: 1 },
    request: {
      kind: 'items',
      node: 'batch',
      params: {},
      items: [],
      concurrency: startNow < total ? startNow : undefined,
      onItemError,
      maxAttempts: 1,
    },
    snapshot: encodeShared(shared),
    total,
    startNow,
    window: startNow,
    refill,
    inputs: items.map((item) => JSON.stringify(item ?? null)),
    outbox,
    now: h.now(),
  };
}

/** A fan-out commit and the inputs of its children, staged before it as the fan-out driver does. */
export type StagedFanOut = FanOutCommit & { inputs: string[] };

/**
 * Stages a fan-out's inputs and commits it, as the fan-out driver does; for child runs, then makes
 * every child's record (as they would start), unless `create` is false.
 */
export async function commitFanOut(
  h: StoreHarness,
  run: StoredRun,
  fields: StagedFanOut,
  create = true,
): Promise<{ result: string; wakes: string[] }> {
  await h.store.stageInputs(run.id, run.step + 1, 0, fields.inputs);
  const reply = await h.store.fanOut(run, fields);
  if (create && reply.result === 'committed' && fields.request.kind === 'runs') {
    await h.store.createChildren(
      run.id,
      run.step + 1,
      Array.from({ length: fields.total }, (_, i) => i),
    );
  }
  return reply;
}

/** A started parent that fanned out into child runs: it is `waiting` at `step`. */
export async function fannedOut(
  h: StoreHarness,
  shape: FanOutShape,
): Promise<{ parent: StoredRun; step: number; children: string[] }> {
  const started = await h.started();
  const { result } = await commitFanOut(h, started, runsFanOut(h, shape));
  if (result !== 'committed') throw new Error(`fan-out of '${started.id}' was ${result}`);
  const parent = await h.load(started.id);
  const children = Array.from({ length: shape.total }, (_, i) => childRunId(parent.id, parent.step, i));
  return { parent, step: parent.step, children };
}

/** The error a parent fails with when it fails fast. */
export const PARENT_ERROR: RunError = { name: 'QueueflowError', code: 'CHILD_FAILED', message: 'a child failed' };

export function completedOutcome(value: Json = 'ok'): ChildOutcome {
  return { status: 'completed', patch: [{ op: 'add', path: '/done', value }], lastAction: 'default' };
}

export function failedOutcome(message = 'child failed'): ChildOutcome {
  return { status: 'failed', error: errorRecord(message, { retryable: false }) };
}

/** A child's end as the fan-out driver reports it; without `outcome`, the store records `cancelled`. */
export function endReport(h: StoreHarness, outcome: ChildOutcome | undefined, failFast = false): ChildEndReport {
  return { ...(outcome ? { outcome } : {}), failFast, parentError: { ...PARENT_ERROR }, now: h.now() };
}

/**
 * Parks `run` on `address` (receive call 0), with the replay a step mailbox leaves (it names the
 * park); returns the run as it is now and its wake id.
 */
export async function parkOn(
  h: StoreHarness,
  run: StoredRun,
  address: string,
): Promise<{ run: StoredRun; wake: string }> {
  const park = { ordinal: 0, address, deadline: null };
  const reply = await h.store.park(run, park, { sent: 0, parked: park }, []);
  if (reply.result !== 'committed') throw new Error(`park of '${run.id}' was ${reply.result}`);
  return { run: await h.load(run.id), wake: wakeId(run.id, run.step, reply.parkCount) };
}

/** The messages at `address`, oldest first, as a fresh run reserving them one by one sees them. */
export async function drain(h: StoreHarness, address: string): Promise<string[]> {
  const reader = await h.started();
  const ids: string[] = [];
  for (let ordinal = 0; ; ordinal++) {
    const reserved = await h.store.reserveMessage(reader, ordinal, address);
    if (reserved === undefined || reserved === 'stale') return ids;
    ids.push(reserved.id);
  }
}

/** Every event a source announces, as `ended:<id>` / `cancelled:<id>`, in order of arrival. */
export class EventLog implements RunEventListener {
  readonly seen: string[] = [];
  private readonly waiting: { event: string; resolve: () => void }[] = [];

  ended(runId: string): void {
    this.add(`ended:${runId}`);
  }

  cancelled(runId: string): void {
    this.add(`cancelled:${runId}`);
  }

  /** Resolves once `event` has arrived (at once if it has). */
  until(event: string): Promise<void> {
    if (this.seen.includes(event)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push({ event, resolve }));
  }

  private add(event: string): void {
    this.seen.push(event);
    for (const waiter of this.waiting.filter((w) => w.event === event)) {
      this.waiting.splice(this.waiting.indexOf(waiter), 1);
      waiter.resolve();
    }
  }
}
