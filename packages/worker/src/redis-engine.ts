import type { Redis } from 'ioredis';
import {
  QueueflowError,
  type Engine,
  type FlowDefinition,
  type FlowsOption,
  type Json,
  type JsonObject,
  type ListRunsOptions,
  type RunHandle,
  type RunInfo,
  type RunOptions,
  type RunResult,
  type ResultOptions,
  type RunSummary,
  type StepRecord,
  type ForkOptions,
  type WorkerInfo,
  type MailboxesOptions,
  type MailboxInfo,
  type RunChange,
  type ChildSummary,
  type FlowGraph,
  type Clock,
} from '@queueflow/runtime';
import { FlowRegistry, ResultWaiter, RunClient, prepareRun, systemClock } from '@queueflow/runtime/kernel';
import { BullmqScheduler } from './bullmq-scheduler.js';
import { connectAll, createRedis, type ConnectionOption } from './connection.js';
import { RedisKeys, normalizePrefix } from './redis-keys.js';
import { RedisRunEvents } from './redis-run-events.js';
import { RedisRunStore } from './redis-run-store.js';
import { withScripts } from './scripts.js';
import { ServerClock } from './server-clock.js';
import { storeOptions, type StoreSettings } from './store-settings.js';
import { WORKER_LAPSE_MS } from './worker-heartbeat.js';

export interface RedisEngineOptions extends StoreSettings {
  /** Redis to use: a URL or ioredis options. @defaultValue `REDIS_URL`, else `redis://127.0.0.1:6379` */
  connection?: ConnectionOption;
  /** The flows this client starts: the same definitions the workers load. */
  flows: FlowsOption;
  /** Key prefix shared with the workers; a hash tag is added when missing. @defaultValue `{qf}` */
  prefix?: string;
  /** Called with connection errors (ioredis retries on its own). @defaultValue ignore */
  onError?: (error: Error) => void;
  /**
   * This machine's clock; timestamps are taken on the Redis server's clock through it (its offset
   * to `TIME` is measured on connecting). @defaultValue the system clock
   */
  clock?: Clock;
}

interface Connected {
  redis: Redis;
  subscriber: Redis;
  scheduler: BullmqScheduler;
  waiter: ResultWaiter;
  client: RunClient;
}

/**
 * The distributed engine's client: starts runs of registered flows in Redis, where workers
 * (`startWorker`, `queueflow worker`) take their steps, and awaits their results. One instance
 * uses two Redis connections (commands, events) however many runs it awaits, opened on the first
 * call. Every method rejects with QueueflowError `REDIS_UNAVAILABLE` (naming the server and the
 * reason) when they cannot be opened; while Redis is unreachable later, commands fail fast rather
 * than queue (BullMQ's advice for producers), and the call may be retried.
 *
 * @example
 * ```ts
 * const engine = new RedisEngine({ connection: process.env.REDIS_URL, flows: [review] });
 * const result = await engine.run('review', { draft: '...' }, { params: { lang: 'en' } });
 * await engine.close();
 * ```
 */
export class RedisEngine implements Engine {
  private readonly registry: FlowRegistry;
  private readonly keys: RedisKeys;
  private readonly settings: ReturnType<typeof storeOptions>;
  private connected: Promise<Connected> | undefined;
  private closed = false;

  /** @throws TypeError for an invalid connection URL or prefix. */
  constructor(private readonly options: RedisEngineOptions) {
    this.registry = new FlowRegistry(options.flows);
    this.keys = new RedisKeys(normalizePrefix(options.prefix));
    this.settings = storeOptions(options, 'RedisEngine');
    createRedis(options.connection, 'client').disconnect(); // validates the connection option now
  }

  async run<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options?: RunOptions,
  ): Promise<RunResult<S>> {
    const handle = await this.start(flow, shared, options);
    return handle.result();
  }

  async start<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options: RunOptions = {},
  ): Promise<RunHandle<S>> {
    // Bad input is refused before connecting: nothing is written then.
    const run = prepareRun(this.registry, flow, shared, options, {
      clock: this.options.clock ?? systemClock,
      ...this.settings,
    });
    const { client } = await this.connect();
    return client.startPrepared(run);
  }

  /**
   * Resolves when run `runId` has ended; warns `QF_NO_WORKER` (once per flow) when no live worker
   * serves its flow for 10 s.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown id; RESULT_TIMEOUT after `timeoutMs`.
   */
  async result(runId: string, options?: ResultOptions): Promise<RunResult> {
    const { client } = await this.connect();
    return client.result(runId, options);
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    const { client } = await this.connect();
    return client.get(runId);
  }

  async list(options?: ListRunsOptions): Promise<RunSummary[]> {
    const { client } = await this.connect();
    return client.list(options);
  }

  /**
   * Cancels the run now: its status becomes `cancelled` and nothing it does later is committed
   * (a step in flight is aborted and stops at that step boundary); a fan-out's children are
   * cancelled too. No-op for a run that has ended.
   *
   * @throws QueueflowError RUN_NOT_FOUND for an unknown (or expired) run id.
   */
  async cancel(runId: string): Promise<void> {
    const { client } = await this.connect();
    return client.cancel(runId);
  }

  /**
   * Sends a message to the mailbox at `address` from outside any run (a person or a service
   * answering an agent); runs parked on that address wake up.
   *
   * @throws QueueflowError `NOT_JSON` for a body that would not survive JSON, `PAYLOAD_TOO_LARGE`
   *   for one over `MAX_MESSAGE_BYTES` (1 MiB); TypeError for a bad address.
   */
  async send(address: string, body: Json): Promise<void> {
    const { client } = await this.connect();
    return client.send(address, body);
  }

  /** @see Engine.history */
  async history(runId: string): Promise<StepRecord[]> {
    return (await this.connect()).client.history(runId);
  }

  /** @see Engine.retry */
  async retry(runId: string): Promise<RunHandle> {
    return (await this.connect()).client.retry(runId);
  }

  /** @see Engine.fork */
  async fork(runId: string, options: ForkOptions): Promise<RunHandle> {
    return (await this.connect()).client.fork(runId, options);
  }

  /** The live workers, from their heartbeats (a worker that stopped heartbeating drops out). */
  async workers(): Promise<WorkerInfo[]> {
    return (await this.connect()).client.workers();
  }

  /** @see Engine.mailboxes */
  async mailboxes(options?: MailboxesOptions): Promise<MailboxInfo[]> {
    return (await this.connect()).client.mailboxes(options);
  }

  /** @see Engine.answer */
  async answer(address: string, messageId: string, body: Json): Promise<void> {
    return (await this.connect()).client.answer(address, messageId, body);
  }

  /** @see Engine.watch */
  async watch(listener: (change: RunChange) => void): Promise<() => void> {
    return (await this.connect()).client.watch(listener);
  }

  /** @see Engine.sharedAt */
  async sharedAt(runId: string, step: number): Promise<JsonObject> {
    return (await this.connect()).client.sharedAt(runId, step);
  }

  /** @see Engine.children */
  async children(runId: string, options?: { offset?: number; limit?: number }): Promise<ChildSummary[]> {
    return (await this.connect()).client.children(runId, options);
  }

  /** @see Engine.graph */
  async graph(flow: string): Promise<FlowGraph | undefined> {
    return (await this.connect()).client.graph(flow);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.connected) return;
    const { redis, subscriber, scheduler, waiter } = await this.connected.catch(() => ({}) as Partial<Connected>);
    waiter?.close();
    await scheduler?.close().catch(() => {});
    await Promise.all([redis?.quit().catch(() => {}), subscriber?.quit().catch(() => {})]);
  }

  private connect(): Promise<Connected> {
    if (this.closed) return Promise.reject(new QueueflowError('ENGINE_CLOSED', 'RedisEngine is closed'));
    this.connected ??= (async () => {
      const onError = this.options.onError ?? (() => {});
      const redis = createRedis(this.options.connection, 'client', onError);
      const subscriber = createRedis(this.options.connection, 'subscriber', onError);
      await connectAll([redis, subscriber]); // on failure, the next call opens new ones
      const clock = new ServerClock(redis, this.options.clock ?? systemClock);
      await clock.sync();
      const scheduler = new BullmqScheduler(redis, this.keys, onError, { client: true });
      const store = new RedisRunStore(withScripts(redis), this.keys, this.settings, clock);
      const waiter: ResultWaiter = new ResultWaiter(
        { subscribe: (listener) => events.subscribe(listener) },
        (id) => client.resultIfEnded(id),
        5000,
      );
      const events = new RedisRunEvents(subscriber, this.keys.events(), this.keys.changes());
      const client: RunClient = new RunClient(store, scheduler, this.registry, waiter, events, {
        clock,
        maxCheckpointBytes: this.settings.maxCheckpointBytes,
        where: `under prefix '${this.keys.prefix}'`,
        workerLapseMs: WORKER_LAPSE_MS,
        noWorkerWarningMs: 10_000,
      });
      await waiter.start();
      return { redis, subscriber, scheduler, waiter, client };
    })();
    this.connected.catch(() => {
      this.connected = undefined; // the next call tries again
    });
    return this.connected;
  }
}
