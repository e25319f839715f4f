import type { RedisConnection } from './connection.js';
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
  type BudgetInfo,
  type QueueInfo,
  type MailboxesOptions,
  type MailboxInfo,
  type RunChange,
  type WatchOptions,
  type ChildSummary,
  type FlowGraph,
  type Clock,
  type StreamEntry,
  type StreamOptions,
  type ScheduleInfo,
  type ScheduleOptions,
  type ScheduleRunOptions,
  type AgentInfo,
  type AgentPage,
  type PublishResult,
  type PublishOptions,
  type ConversationInfo,
  type EngineSendOptions,
  type AgentTurnInfo,
  type AskOptions,
  type ListAgentsOptions,
  type Message,
  type MemoryInfo,
  type ConversationFork,
  type ForkConversationOptions,
  type CancelOptions,
  type RunEvent,
} from '@queueflow/runtime';
import {
  FlowRegistry,
  ResultWaiter,
  RunClient,
  checkAddress,
  checkRunId,
  checkSchedule,
  checkWellFormed,
  checkScheduleName,
  invalidOption,
  prepareRun,
  systemClock,
  AgentClient,
  AgentRuntime,
  agentsOf,
  withTurnFlows,
  type AgentDefinition,
  checkTopic,
  memoryInfo,
} from '@queueflow/runtime/kernel';
import { RedisAgentStore } from './redis-agent-store.js';
import { RedisConversationStore } from './redis-conversation-store.js';
import { RedisSharedMemoryStore } from './redis-shared-memory-store.js';
import { BullmqScheduler } from './bullmq-scheduler.js';
import {
  connectAll,
  createRedis,
  lastErrorOf,
  redisErrorOf,
  serverOf,
  unavailableNow,
  type ConnectionOption,
} from './connection.js';
import { probeServer } from './probe-server.js';
import { normalizePrefix } from './redis-keys.js';
import { checkPartitions, countStoredSince, readPartitions, storePartitions, type Partitions } from './partitions.js';
import { RedisRunEvents } from './redis-run-events.js';
import { RedisRunStore } from './redis-run-store.js';
import { withScripts } from './scripts.js';
import { ServerClock } from './server-clock.js';
import { storeOptions, type StoreSettings } from './store-settings.js';
import { RedisSchedules } from './redis-schedules.js';
import { StreamReader } from './stream-reader.js';
import { WORKER_LAPSE_MS } from './worker-heartbeat.js';

export interface RedisEngineOptions extends StoreSettings {
  /**
   * Redis to use: a URL, ioredis options, or a Redis Cluster (`{ cluster: [url, ...] }`).
   * @defaultValue `REDIS_URL`, else `redis://127.0.0.1:6379`
   */
  connection?: ConnectionOption;
  /** The flows this client starts: the same definitions the workers load. */
  flows: FlowsOption;
  /**
   * The agent types this client knows (`defineAgent`), beside those a module given as `flows`
   * exports: a message it sends to an idle agent of a known type starts the turn at once; one of
   * another type, within a worker's heartbeat (the workers that run the type start it).
   */
  agents?: readonly AgentDefinition<any>[];
  /**
   * Key prefix shared with the workers. Its hash tag (the text between the first `{` and the first
   * `}` after it) keeps every key in one Redis Cluster slot; a prefix without `{` gets braces
   * around it, so `b6acme` and `{b6acme}` name the same keys. @defaultValue `{qf}`
   * @throws TypeError (from the constructor) for a prefix with spaces or `:`, a `{` with no `}`
   *   after it (`a{b`), or an empty hash tag (`{}`, `x{}`).
   */
  prefix?: string;
  /**
   * Partitions of the deployment's store (README "Scaling out"): each has a hash tag, and so a
   * Redis Cluster slot, of its own; runs spread over them by id. Stored once, in partition 0's
   * settings (`<prefix>:settings`), by the first worker to start or client to write: unset,
   * the stored count is used; set, it must equal the stored one.
   * @defaultValue the stored count, else 16 on a Redis Cluster and 1 on one server
   * @throws TypeError (from the constructor) for a count that is not an integer from 1 to 1024;
   *   QueueflowError `INVALID_OPTION` (from the first call) for one that differs from the stored count,
   *   and (from a start or a send) once the stored count has changed since this client read it (a
   *   purge, or a Redis restarted empty, and a worker of another count since): nothing is written then.
   */
  partitions?: number;
  /** Called with connection errors (ioredis retries on its own). @defaultValue ignore */
  onError?: (error: Error) => void;
  /**
   * This machine's clock; timestamps are taken on the Redis server's clock through it (its offset
   * to `TIME` is measured on connecting). @defaultValue the system clock
   */
  clock?: Clock;
  /**
   * Longest a call waits for Redis to answer one of its commands, in ms: every method then
   * settles (a frozen or overloaded Redis that keeps its connections open would otherwise hold it
   * as long as it lasts) with QueueflowError `REDIS_TIMEOUT` naming the server and the time. What
   * the call asked may still happen once Redis answers. The engine works again as soon as Redis
   * answers. Workers have no such limit: they wait for Redis. @defaultValue 5000
   */
  commandTimeoutMs?: number;
}

interface Connected {
  redis: RedisConnection;
  partitions: Partitions;
  /** Whether the partition count was stored when this connected, or has been by a write since. */
  countStored: Promise<void> | undefined;
  subscriber: RedisConnection;
  reader: StreamReader;
  scheduler: BullmqScheduler;
  waiter: ResultWaiter;
  client: RunClient;
  schedules: RedisSchedules;
  agents: AgentClient;
  memories: RedisSharedMemoryStore;
}

/**
 * The distributed engine's client: starts runs of registered flows in Redis, where workers
 * (`startWorker`, `queueflow worker`) take their steps, and awaits their results. One instance
 * uses two Redis connections (commands, events) however many runs it awaits, opened on the first
 * call, and a third (blocking stream reads) however many runs it follows, opened on the first
 * `stream`. Every method rejects with QueueflowError `REDIS_UNAVAILABLE` (naming the server and the
 * reason) when they cannot be opened; while Redis is unreachable later, calls fail fast rather
 * than queue (BullMQ's advice for producers), with the same error, and may be retried: the
 * connections come back on their own when Redis does. A Redis that does not
 * answer (frozen, overloaded) fails a call with `REDIS_TIMEOUT` after `commandTimeoutMs`.
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
  private readonly agentTypes: AgentDefinition<any>[];
  private readonly prefix: string;
  private readonly partitions: number | undefined;
  private readonly settings: ReturnType<typeof storeOptions>;
  private connected: Promise<Connected> | undefined;
  private closed = false;
  private readonly commandTimeoutMs: number;
  /** Where Redis is, as errors name it (without the password). */
  private readonly server: string;

  /** @throws TypeError for an invalid connection URL, prefix or `commandTimeoutMs`. */
  constructor(private readonly options: RedisEngineOptions) {
    this.agentTypes = agentsOf(options.flows, options.agents);
    this.registry = new FlowRegistry(withTurnFlows(options.flows, this.agentTypes));
    this.prefix = normalizePrefix(options.prefix);
    this.partitions = checkPartitions('RedisEngine', options.partitions);
    this.settings = storeOptions(options, 'RedisEngine');
    const timeout = options.commandTimeoutMs ?? 5000;
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1) {
      throw invalidOption(
        'RedisEngine',
        'commandTimeoutMs',
        'an integer number of milliseconds from 1 and up',
        timeout,
      );
    }
    this.commandTimeoutMs = timeout;
    const redis = createRedis(options.connection, 'client'); // validates the connection option now
    this.server = serverOf(redis);
    redis.disconnect();
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
    return this.write(({ client }) => client.startPrepared(run));
  }

  /**
   * Resolves when run `runId` has ended; warns `QF_NO_WORKER` (once per flow) when no live worker
   * serves its flow for 10 s.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown id; RESULT_TIMEOUT after `timeoutMs`.
   */
  async result(runId: string, options?: ResultOptions): Promise<RunResult> {
    return this.call((client) => client.result(runId, options));
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    return this.call((client) => client.get(runId));
  }

  async list(options?: ListRunsOptions): Promise<RunSummary[]> {
    return this.call((client) => client.list(options));
  }

  /**
   * Cancels the run now: its status becomes `cancelled` and nothing it does later is committed
   * (a step in flight is aborted and stops at that step boundary); a fan-out's children are
   * cancelled too. No-op for a run that has ended. The run's event log names `options.by` (see
   * `Engine.cancel`).
   *
   * @throws QueueflowError RUN_NOT_FOUND for an unknown (or expired) run id.
   */
  async cancel(runId: string, options?: CancelOptions): Promise<void> {
    return this.withConnection(async ({ client, agents }) => {
      await client.cancel(runId, options);
      await agents.cancelled(runId);
    });
  }

  /**
   * Sends a message to the mailbox at `address` from outside any run (a person or a service
   * answering an agent); runs parked on that address wake up.
   *
   * @returns the message's id (the `id` its receiver sees).
   * @throws QueueflowError `NOT_JSON` for a body that would not survive JSON, `PAYLOAD_TOO_LARGE`
   *   for one over `MAX_MESSAGE_BYTES` (1 MiB); TypeError (code `INVALID_ARGUMENT`) for a bad address.
   */
  async send(address: string, body: Json, options?: EngineSendOptions): Promise<string> {
    checkAddress('send', address); // before the partition count is stored: a refusal writes nothing
    return this.write(({ agents }) => agents.send(address, body, options));
  }

  /** @see Engine.ask */
  async ask(address: string, body: Json, options?: AskOptions): Promise<Message | undefined> {
    checkAddress('ask', address);
    return this.write(({ agents }) => agents.ask(address, body, options));
  }

  /** @see Engine.publish */
  async publish(topic: string, body: Json, options?: PublishOptions): Promise<PublishResult> {
    checkTopic('publish', topic); // before the partition count is stored: a refusal writes nothing
    return this.write(({ agents }) => agents.publish(topic, body, options));
  }

  /** @see Engine.conversation */
  async conversation(id: string): Promise<ConversationInfo | undefined> {
    return this.withConnection(({ agents }) => agents.conversation(id));
  }

  /** @see Engine.forkConversation */
  async forkConversation(id: string, options: ForkConversationOptions): Promise<ConversationFork> {
    return this.withConnection(({ agents }) => agents.forkConversation(id, options));
  }

  /** @see Engine.memory */
  async memory(name: string): Promise<MemoryInfo> {
    return this.withConnection(({ memories }) => memoryInfo(memories, name));
  }

  /** @see Engine.conversations */
  async conversations(options?: { limit?: number; cursor?: string }): Promise<{ ids: string[]; cursor?: string }> {
    return this.withConnection(({ agents }) => agents.conversationIds(options));
  }

  /** @see Engine.agent */
  async agent(ref: string): Promise<AgentInfo | undefined> {
    return this.withConnection(({ agents }) => agents.agent(ref));
  }

  /** @see Engine.agents */
  async agents(options?: ListAgentsOptions): Promise<AgentPage> {
    return this.withConnection(({ agents }) => agents.agents(options));
  }

  /** @see Engine.query */
  async query(ref: string, name: string, arg?: Json): Promise<unknown> {
    return this.withConnection(({ agents }) => agents.query(ref, name, arg));
  }

  /** @see Engine.deleteAgent */
  async deleteAgent(ref: string): Promise<boolean> {
    return this.withConnection(({ agents }) => agents.deleteAgent(ref));
  }

  /** @see Engine.redeliver */
  async redeliver(ref: string, messageId: string): Promise<void> {
    return this.write(({ agents }) => agents.redeliver(ref, messageId));
  }

  /** @see Engine.agentHistory */
  async agentHistory(ref: string): Promise<AgentTurnInfo[]> {
    return this.withConnection(({ agents }) => agents.agentHistory(ref));
  }

  /** @see Engine.history */
  async history(runId: string): Promise<StepRecord[]> {
    return this.call((client) => client.history(runId));
  }

  /** @see Engine.runEvents */
  async runEvents(runId: string): Promise<RunEvent[]> {
    return this.call((client) => client.runEvents(runId));
  }

  /** @see Engine.retry */
  async retry(runId: string): Promise<RunHandle> {
    return this.call((client) => client.retry(runId));
  }

  /** @see Engine.fork */
  async fork(runId: string, options: ForkOptions): Promise<RunHandle> {
    checkRunId('fork', runId); // before the partition count is stored: a refusal writes nothing
    return this.write(({ client }) => client.fork(runId, options));
  }

  /** The live workers, from their heartbeats (a worker that stopped heartbeating drops out). */
  async workers(): Promise<WorkerInfo[]> {
    return this.call((client) => client.workers());
  }

  /** @see Engine.budgets */
  async budgets(): Promise<BudgetInfo[]> {
    return this.call((client) => client.budgets());
  }

  /** @see Engine.queues */
  async queues(): Promise<QueueInfo[]> {
    return this.call((client) => client.queues());
  }

  /**
   * The deployment's partitions (README "Scaling out"): the stored count when this engine
   * connected, else the one it stores at its first write. `indexOfAddress` says where a mailbox,
   * and so an agent, lives: a message between two partitions is a hand-off.
   */
  async deploymentPartitions(): Promise<Partitions> {
    return this.withConnection(async ({ partitions }) => partitions);
  }

  /** @see Engine.mailboxes */
  async mailboxes(options?: MailboxesOptions): Promise<MailboxInfo[]> {
    return this.call((client) => client.mailboxes(options));
  }

  /** @see Engine.answer */
  async answer(address: string, messageId: string, body: Json): Promise<void> {
    // Before the partition count is stored: a refusal writes nothing.
    checkAddress('answer', address);
    checkWellFormed('answer', 'messageId', messageId);
    return this.write(({ client }) => client.answer(address, messageId, body));
  }

  /** @see Engine.watch */
  async watch(listener: (change: RunChange) => void, options?: WatchOptions): Promise<() => void> {
    return this.call((client) => client.watch(listener, options));
  }

  /** @see Engine.sharedAt */
  async sharedAt(runId: string, step: number): Promise<JsonObject> {
    return this.call((client) => client.sharedAt(runId, step));
  }

  /** @see Engine.children */
  async children(runId: string, options?: { offset?: number; limit?: number }): Promise<ChildSummary[]> {
    return this.call((client) => client.children(runId, options));
  }

  /**
   * @see Engine.stream. Every follower of this engine waits on one connection of its own (opened
   * on the first follow), however many runs they follow.
   */
  async *stream(runId: string, options?: StreamOptions): AsyncGenerator<StreamEntry, void, undefined> {
    let connected: Connected | undefined;
    try {
      connected = await this.ready();
      yield* connected.client.stream(runId, options);
    } catch (error) {
      throw this.errorOf(error, connected);
    }
  }

  /** @see Engine.graph */
  async graph(flow: string): Promise<FlowGraph | undefined> {
    return this.call((client) => client.graph(flow));
  }

  /**
   * Starts runs on a schedule, as a BullMQ job scheduler on the default queue: it outlives this
   * client, and its ticks are taken by workers serving the default queue (each starts the run
   * with the flows it loaded: a worker without the flow leaves the tick to another).
   * @throws QueueflowError `INVALID_OPTION`, `UNKNOWN_FLOW`, `NOT_JSON` (before connecting).
   * @see Engine.schedule
   */
  async schedule<S extends object = JsonObject>(
    name: string,
    flow: FlowDefinition | string,
    options: ScheduleOptions,
    shared: S,
    runOptions?: ScheduleRunOptions,
  ): Promise<void> {
    // Bad input is refused before connecting: nothing is written then.
    const definition = checkSchedule(this.registry, name, flow, options, shared, runOptions);
    await this.write(({ schedules }) => schedules.upsert(definition));
  }

  /**
   * Removes a schedule (its BullMQ job scheduler): no tick follows; runs it started go on.
   * @returns whether there was such a schedule.
   * @see Engine.unschedule
   */
  async unschedule(name: string): Promise<boolean> {
    checkScheduleName(name);
    return this.withConnection(({ schedules }) => schedules.remove(name));
  }

  /** The schedules, by name, with their next tick and last run. @see Engine.schedules */
  async schedules(): Promise<ScheduleInfo[]> {
    return this.withConnection(({ schedules }) => schedules.list());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.connected) return;
    const { redis, subscriber, scheduler, waiter, reader } = await this.connected.catch(
      () => ({}) as Partial<Connected>,
    );
    waiter?.close();
    await reader?.close();
    await scheduler?.close().catch(() => {});
    await Promise.all([redis?.quit().catch(() => {}), subscriber?.quit().catch(() => {})]);
  }

  /**
   * Runs `body` with the run client, connecting first; errors of its Redis commands (ioredis's,
   * or BullMQ's on the same connection) become queueflow's as {@link RedisEngine.errorOf} says.
   */
  private async call<T>(body: (client: RunClient) => Promise<T>): Promise<T> {
    return this.withConnection(({ client }) => body(client));
  }

  /**
   * As {@link RedisEngine.withConnection}, for a call that makes something new (a run, a message,
   * a schedule): the deployment's partition count is stored first if nobody had stored it when
   * this client connected (see `storePartitions`). Calls on what exists (cancel, retry) found it
   * under the count this client reads, and store nothing.
   */
  private async write<T>(body: (connected: Connected) => Promise<T>): Promise<T> {
    return this.withConnection(async (connected) => {
      await this.storeCount(connected);
      return body(connected);
    });
  }

  private storeCount(connected: Connected): Promise<void> {
    const { count } = connected.partitions;
    connected.countStored ??= storePartitions(connected.redis, this.prefix, count, 'RedisEngine')
      .then((stored) => {
        if (stored !== count) throw countStoredSince('RedisEngine', this.prefix, count, stored);
      })
      .catch((error: unknown) => {
        connected.countStored = undefined; // the next write checks again
        throw error;
      });
    return connected.countStored;
  }

  /** As {@link RedisEngine.call}, with everything the connection holds. */
  private async withConnection<T>(body: (connected: Connected) => Promise<T>): Promise<T> {
    let connected: Connected | undefined;
    try {
      connected = await this.ready();
      return await body(connected);
    } catch (error) {
      throw this.errorOf(error, connected);
    }
  }

  /**
   * The connections, opened on the first call; rejects at once with `REDIS_UNAVAILABLE` while
   * the command connection is down (BullMQ would wait for it to come back, and ioredis refuses).
   */
  private async ready(): Promise<Connected> {
    const connected = await this.connect();
    const down = unavailableNow(connected.redis, this.server);
    if (down) throw down;
    return connected;
  }

  /**
   * The one place where an error of a call's Redis commands becomes queueflow's (redisErrorOf):
   * an unanswered command `REDIS_TIMEOUT`; one refused because Redis went away (ioredis's
   * "Stream isn't writeable...") `REDIS_UNAVAILABLE`, saying why as an engine that could not
   * connect at all does (the connection's last error, e.g. `connect ECONNREFUSED ...`).
   */
  private errorOf(error: unknown, connected: Connected | undefined): unknown {
    const lastError = connected && (lastErrorOf(connected.redis) ?? lastErrorOf(connected.subscriber));
    return redisErrorOf(error, this.server, this.commandTimeoutMs, lastError);
  }

  private connect(): Promise<Connected> {
    if (this.closed) return Promise.reject(new QueueflowError('ENGINE_CLOSED', 'RedisEngine is closed'));
    this.connected ??= (async () => {
      const onError = this.options.onError ?? (() => {});
      const commandTimeoutMs = this.commandTimeoutMs;
      // May this user run INFO? A least-privilege one may not (README "Production Redis").
      const server = await probeServer(this.options.connection, commandTimeoutMs);
      const settings = { readyCheck: server.info, commandTimeoutMs };
      const redis = createRedis(this.options.connection, 'client', onError, settings);
      const subscriber = createRedis(this.options.connection, 'subscriber', onError, settings);
      await connectAll([redis, subscriber]); // on failure, the next call opens new ones
      const { partitions, stored } = await readPartitions(redis, this.prefix, this.partitions, 'RedisEngine').catch(
        (error: unknown) => {
          redis.disconnect();
          subscriber.disconnect();
          throw error;
        },
      );
      const keys = partitions.home;
      const clock = new ServerClock(redis, this.options.clock ?? systemClock);
      const scheduler = new BullmqScheduler(redis, partitions, onError, {
        client: true,
        skipVersionCheck: !server.info,
      });
      const reader = new StreamReader(() => createRedis(this.options.connection, 'reader', onError), redis);
      const store = new RedisRunStore(withScripts(redis), partitions, this.settings, clock, reader);
      const waiter: ResultWaiter = new ResultWaiter(
        { subscribe: (listener) => events.subscribe(listener) },
        (id) => client.resultIfEnded(id),
        5000,
      );
      const events = new RedisRunEvents(subscriber, keys.events(), keys.changes());
      const client: RunClient = new RunClient(store, scheduler, this.registry, waiter, events, {
        clock,
        maxCheckpointBytes: this.settings.maxCheckpointBytes,
        largeValueBytes: this.settings.largeValueBytes,
        where: `under prefix '${this.prefix}'`,
        workerLapseMs: WORKER_LAPSE_MS,
        noWorkerWarningMs: 10_000,
      });
      try {
        // The clock's offset to Redis is measured, BullMQ's queue gets ready (its version check)
        // and the events subscription is made now: should Redis stop answering meanwhile, the
        // next call starts again from new connections.
        await Promise.all([clock.sync(), scheduler.queue.waitUntilReady(), waiter.start()]);
      } catch (error) {
        waiter.close();
        await scheduler.close().catch(() => {});
        redis.disconnect();
        subscriber.disconnect();
        throw error;
      }
      const schedules = new RedisSchedules(redis, keys, scheduler);
      const countStored = stored ? Promise.resolve() : undefined;
      const agentStore = new RedisAgentStore(
        withScripts(redis),
        partitions,
        () => createRedis(this.options.connection, 'reader', onError),
        this.settings.retentionSeconds,
      );
      const conversations = new RedisConversationStore(withScripts(redis), partitions, this.settings.retentionSeconds);
      const runtime = new AgentRuntime(this.agentTypes, agentStore, store, scheduler, this.registry, {
        conversations,
        clock,
        maxCheckpointBytes: this.settings.maxCheckpointBytes,
        largeValueBytes: this.settings.largeValueBytes,
      });
      const agents = new AgentClient(agentStore, store, runtime, client, conversations, clock);
      const memories = new RedisSharedMemoryStore(withScripts(redis), partitions);
      return {
        redis,
        partitions,
        countStored,
        subscriber,
        scheduler,
        waiter,
        client,
        reader,
        schedules,
        agents,
        memories,
      };
    })();
    this.connected.catch(() => {
      this.connected = undefined; // the next call tries again
    });
    return this.connected;
  }
}
