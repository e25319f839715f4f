import { nanoid } from 'nanoid';
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
} from '@queueflow/runtime';
import {
  checkAddress,
  checkMessageBody,
  checkRunInput,
  newRunId,
  encodeCheckpoint,
  FlowRegistry,
  initialCheckpoint,
} from '@queueflow/runtime/interpreter';
import { connectAll, createRedis, type ConnectionOption } from './connection.js';
import { RedisKeys, normalizePrefix } from './redis-keys.js';
import { RunEvents } from './run-events.js';
import { StepQueue } from './step-queue.js';
import { storeOptions, type StoreSettings } from './store-settings.js';
import { createStores, type Stores } from './stores.js';

export interface RedisEngineOptions extends StoreSettings {
  /** Redis to use: a URL or ioredis options. @defaultValue `REDIS_URL`, else `redis://127.0.0.1:6379` */
  connection?: ConnectionOption;
  /** The flows this client starts: the same definitions the workers load. */
  flows: FlowsOption;
  /** Key prefix shared with the workers; a hash tag is added when missing. @defaultValue `{qf}` */
  prefix?: string;
  /** Called with connection errors (ioredis retries on its own). @defaultValue ignore */
  onError?: (error: Error) => void;
}

interface Connected {
  redis: Redis;
  subscriber: Redis;
  stores: Stores;
  queue: StepQueue;
  events: RunEvents;
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
    const graph = this.registry.graph(flow);
    const input = checkRunInput(shared, options.params);
    const { checkpoint, target } = initialCheckpoint(graph, input.shared, input.params);
    const encoded = encodeCheckpoint(checkpoint, this.settings.maxCheckpointBytes);
    const { stores, queue, events } = await this.connect();
    const id = newRunId();
    await stores.runs.create({
      id,
      flow: graph.flowName,
      fingerprint: graph.fingerprint,
      checkpoint: encoded,
      target,
      now: Date.now(),
    });
    try {
      await queue.addStep(id, 0, target);
    } catch (error) {
      await stores.runs.discard(id).catch(() => {});
      throw error;
    }
    return { id, result: () => events.wait(id) as Promise<RunResult<S>> };
  }

  /** Resolves when run `runId` has ended. @throws QueueflowError RUN_NOT_FOUND for an unknown id. */
  async result(runId: string): Promise<RunResult> {
    const { events } = await this.connect();
    return events.wait(runId);
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    const { stores } = await this.connect();
    return stores.runs.info(runId);
  }

  async list(options?: ListRunsOptions): Promise<RunInfo[]> {
    const { stores } = await this.connect();
    return stores.runs.list(options);
  }

  /**
   * Cancels the run now: its status becomes `cancelled` and nothing it does later is committed
   * (a step in flight is aborted and stops at that step boundary); a fan-out's children are
   * cancelled too. No-op for a run that has ended.
   *
   * @throws QueueflowError RUN_NOT_FOUND for an unknown (or expired) run id.
   */
  async cancel(runId: string): Promise<void> {
    const { stores, queue } = await this.connect();
    const result = await stores.runs.cancel(runId);
    if (result === 'missing')
      throw new QueueflowError('RUN_NOT_FOUND', `no run '${runId}' under prefix '${this.keys.prefix}'`);
    if (result === 'ended') return;
    const run = await stores.runs.load(runId);
    if (!run) return;
    if (result === 'cancelled-waiting') {
      const fanOut = await stores.fanOuts.fanOutOf(runId);
      if (fanOut) await stores.fanOuts.cancelChildren(runId, run.step, fanOut.request);
    }
    // A cancelled fan-out child must be reported to its parent: a worker that takes its step
    // job finds it ended and does that (the job may exist already; the add is then a no-op).
    if (run.parent) await queue.addStep(runId, run.step, run.target);
  }

  /**
   * Sends a message to the mailbox at `address` from outside any run (a person or a service
   * answering an agent); runs parked on that address wake up.
   *
   * @throws QueueflowError `NOT_JSON` for a body that would not survive JSON, `PAYLOAD_TOO_LARGE`
   *   for one over `MAX_MESSAGE_BYTES` (1 MiB); TypeError for a bad address.
   */
  async send(address: string, body: Json): Promise<void> {
    checkAddress('send', address);
    checkMessageBody(body, `message body sent to '${address}'`);
    const { stores } = await this.connect();
    await stores.mailboxes.send(address, { id: `m.${nanoid()}`, body, sentAt: Date.now() });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.connected) return;
    const { redis, subscriber, queue, events } = await this.connected.catch(() => ({}) as Partial<Connected>);
    events?.close();
    await queue?.close().catch(() => {});
    await Promise.all([redis?.quit().catch(() => {}), subscriber?.quit().catch(() => {})]);
  }

  private connect(): Promise<Connected> {
    if (this.closed) return Promise.reject(new QueueflowError('ENGINE_CLOSED', 'RedisEngine is closed'));
    this.connected ??= (async () => {
      const onError = this.options.onError ?? (() => {});
      const redis = createRedis(this.options.connection, 'client', onError);
      const subscriber = createRedis(this.options.connection, 'subscriber', onError);
      await connectAll([redis, subscriber]); // on failure, the next call opens new ones
      const queue = new StepQueue(redis, this.keys, onError, { client: true });
      const stores = createStores(redis, this.keys, { ...this.settings, wake: (jobIds) => queue.promote(jobIds) });
      const events = new RunEvents(subscriber, this.keys.events(), (id) => stores.runs.resultIfEnded(id));
      await events.start();
      return { redis, subscriber, stores, queue, events };
    })();
    this.connected.catch(() => {
      this.connected = undefined; // the next call tries again
    });
    return this.connected;
  }
}
