import { hostname } from 'node:os';
import { checkOptionalPositiveInteger } from '../core/validate-options.js';
import { checkLargeValueBytes } from '../kernel/claim-check.js';
import { DEFAULT_QUEUE } from '../core/queue-name.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import { FlowRegistry, type FlowDefinition, type FlowsOption } from '../interpreter/flow-definition.js';
import type { Json, JsonObject } from '../json/json.js';
import { systemClock, type Clock } from '../kernel/clock.js';
import type {
  ChildSummary,
  Engine,
  FlowGraph,
  ForkOptions,
  ListRunsOptions,
  MailboxesOptions,
  MailboxInfo,
  RunChange,
  WatchOptions,
  RunHandle,
  RunInfo,
  RunOptions,
  ResultOptions,
  RunResult,
  RunSummary,
  ScheduleInfo,
  ScheduleOptions,
  ScheduleRunOptions,
  StepRecord,
  RunEvent,
  CancelOptions,
  StreamEntry,
  StreamOptions,
  WorkerInfo,
  BudgetInfo,
  QueueInfo,
} from '../kernel/engine.js';
import { ResultWaiter } from '../kernel/result-waiter.js';
import { RunClient } from '../kernel/run-client.js';
import { StepDriver } from '../kernel/step-driver.js';
import { LocalScheduler } from './local-scheduler.js';
import { LocalSchedules } from './local-schedules.js';
import { warn } from '../core/warnings.js';
import { checkSchedule, checkScheduleName } from '../kernel/schedule-definition.js';
import { runScheduleTick } from '../kernel/schedule-tick.js';
import { MemoryRunStore } from './memory-run-store.js';
import { MemoryAgentStore } from './memory-agent-store.js';
import { AgentRuntime } from '../agent/agent-runtime.js';
import { AgentClient } from '../agent/agent-client.js';
import { ReminderTimer } from '../agent/reminder-timer.js';
import { agentsOf, withTurnFlows } from '../agent/agent-registry.js';
import type { AgentDefinition } from '../agent/define-agent.js';
import type {
  AgentInfo,
  AgentPage,
  AgentTurnInfo,
  AskOptions,
  ListAgentsOptions,
  PublishResult,
  PublishOptions,
  ConversationInfo,
  ConversationFork,
  ForkConversationOptions,
  EngineSendOptions,
} from '../agent/agent-types.js';
import { MemoryConversationStore } from './memory-conversation-store.js';
import { MemorySharedMemoryStore } from './memory-shared-memory-store.js';
import { memoryInfo, type MemoryInfo } from '../agent/shared-memory.js';
import type { Message } from '../mailbox/message.js';
import { observeGauges } from '../telemetry/metrics.js';
import { inboxDepths } from '../agent/inbox-depth.js';

export interface LocalEngineOptions {
  /** The flows this engine runs: definitions from `defineFlow`, or a module exporting them (and agents). */
  flows: FlowsOption;
  /** The agent types this engine runs (`defineAgent`), beside those a module given as `flows` exports. */
  agents?: readonly AgentDefinition<any>[];
  /** Most steps running at once in this process. @defaultValue 16 */
  concurrency?: number;
  /** Finished runs kept for `get` (fan-out children included), oldest dropped first. @defaultValue 10000 */
  retainFinishedRuns?: number;
  /** Largest encoded checkpoint, in bytes. @defaultValue 16 MiB */
  maxCheckpointBytes?: number;
  /** Time source for retry delays, deadlines and records; tests inject a fake one. @defaultValue the system clock */
  clock?: Clock;
  /** Step records kept per run for `history`, `fork` and `sharedAt`, oldest dropped first. @defaultValue 10000 */
  maxStepRecords?: number;
  /**
   * Values in `shared` whose JSON is over this many bytes (UTF-8) are stored once, apart, under
   * the sha256 of their JSON, and checkpoints, step records and fan-out snapshots refer to them
   * (a claim check): runs, steps and fan-out children that hold the same large value hold one
   * copy. A value is kept while a run the engine keeps refers to it. `Infinity` turns this off.
   * @defaultValue 262144 (256 KiB)
   */
  largeValueBytes?: number;
}

/**
 * The embedded engine: runs registered flows step by step in this process, through the same run
 * kernel as the Redis engine (the step driver and run client) over an in-memory store and an
 * in-process scheduler. Every checkpoint goes through JSON, so what works here survives the Redis
 * engine too.
 *
 * @example
 * ```ts
 * const engine = new LocalEngine({ flows: [review] });
 * const result = await engine.run('review', { draft: '...' });
 * if (result.status === 'completed') console.log(result.lastAction, result.shared);
 * ```
 */
export class LocalEngine implements Engine {
  /** Shared memories of this engine's steps (`this.memory`). */
  private readonly memories: MemorySharedMemoryStore;
  private readonly store: MemoryRunStore;
  private readonly scheduler: LocalScheduler;
  private readonly driver: StepDriver;
  private readonly waiter: ResultWaiter;
  private readonly client: RunClient;
  private readonly ready: Promise<void>;
  /** This engine as the one worker that runs its steps. */
  private readonly self: Omit<WorkerInfo, 'active' | 'lastSeenAt'>;
  private readonly clock: Clock;
  private readonly registry: FlowRegistry;
  /** Keyed agents: their turns' lifecycle, and what the engine answers about them. */
  private readonly agentRuntime: AgentRuntime;
  private readonly agentClient: AgentClient;
  private readonly reminders: ReminderTimer;
  /** The schedules (their ticks are timers on the clock). */
  private readonly schedulesHere: LocalSchedules;
  /** Unregisters the observable gauges (queue depth, parked runs). */
  private readonly unobserve: () => void;
  private closed = false;

  /** @throws TypeError for invalid options. */
  constructor(options: LocalEngineOptions) {
    const agents = agentsOf(options.flows, options.agents);
    const registry = new FlowRegistry(withTurnFlows(options.flows, agents));
    const clock = options.clock ?? systemClock;
    const retainFinishedRuns =
      checkOptionalPositiveInteger('LocalEngine', 'retainFinishedRuns', options.retainFinishedRuns) ?? 10_000;
    const maxCheckpointBytes =
      checkOptionalPositiveInteger('LocalEngine', 'maxCheckpointBytes', options.maxCheckpointBytes) ?? 16 * 1024 * 1024;
    const concurrency = checkOptionalPositiveInteger('LocalEngine', 'concurrency', options.concurrency) ?? 16;
    const maxStepRecords =
      checkOptionalPositiveInteger('LocalEngine', 'maxStepRecords', options.maxStepRecords) ?? 10_000;
    const largeValueBytes = checkLargeValueBytes('LocalEngine', options.largeValueBytes);
    this.store = new MemoryRunStore(clock, retainFinishedRuns, maxStepRecords);
    this.scheduler = new LocalScheduler(concurrency, clock);
    this.self = {
      id: `local:${hostname()}:${process.pid}`,
      host: hostname(),
      pid: process.pid,
      concurrency,
      flows: registry.names(),
      queues: queuesOf(registry),
      startedAt: clock.now(),
    };
    this.clock = clock;
    this.registry = registry;
    this.schedulesHere = new LocalSchedules(clock, (schedule, at) => {
      const host = {
        registry,
        store: this.store,
        scheduler: this.scheduler,
        log: this.schedulesHere,
        clock,
        maxCheckpointBytes,
      };
      runScheduleTick(schedule, at, host).catch((error: unknown) =>
        warn(
          'QF_SCHEDULE_TICK_FAILED',
          `schedule '${schedule.name}' could not start a run of '${schedule.flow}': ${(error as Error).message}`,
        ),
      );
    });
    const agentStore = new MemoryAgentStore(this.store, clock, this.store);
    // A turn's end commits with its run's last step, as on Redis: a reply the turn sends is never
    // seen before the state it commits.
    this.store.endTurns = (ref, end) => agentStore.endTurnNow(ref, end);
    const conversations = new MemoryConversationStore();
    this.memories = new MemorySharedMemoryStore();
    this.agentRuntime = new AgentRuntime(agents, agentStore, this.store, this.scheduler, registry, {
      conversations,
      clock,
      maxCheckpointBytes,
      largeValueBytes,
      checkpointOf: (run) => this.driver.checkpointOf(run),
    });
    // In memory no wake is lost: a parked run sleeps until its message or its deadline.
    this.driver = new StepDriver(this.store, this.scheduler, registry, {
      agents: this.agentRuntime,
      memories: this.memories,
      conversations,
      clock,
      maxCheckpointBytes,
      refusalDelayMs: 5000,
      parkRecheckMs: Infinity,
      workerId: this.self.id,
      largeValueBytes,
    });
    this.waiter = new ResultWaiter(this.store, (runId) => this.client.resultIfEnded(runId));
    this.client = new RunClient(this.store, this.scheduler, registry, this.waiter, this.store, {
      clock,
      maxCheckpointBytes,
      largeValueBytes,
      where: 'in this engine',
      workerLapseMs: Infinity,
    });
    this.agentClient = new AgentClient(agentStore, this.store, this.agentRuntime, this.client, conversations, clock);
    // Only this engine sets reminders here: its timer is armed for the earliest, never polls.
    this.reminders = new ReminderTimer(
      () => this.agentRuntime.fireReminders(),
      clock,
      Infinity,
      (error) => warn('QF_REMINDERS_FAILED', `reminders could not fire: ${(error as Error).message}`),
    );
    this.agentRuntime.reminderSet = (due) => this.reminders.set(due);
    this.unobserve = observeGauges({
      queueDepth: () => this.scheduler.waiting,
      parkedRuns: () => this.store.parkedRuns(),
      agentInboxes: () => inboxDepths(this.store, (type) => this.agentRuntime.definition(type)?.options.capacity),
    });
    this.ready = Promise.all([
      this.waiter.start(),
      this.store.subscribe({
        cancelled: (runId, retries) => this.driver.abort(runId, retries),
        // Every end of a turn (a cancel, a fan-out failing fast) reaches its key, not only commits.
        ...(agents.length === 0 ? {} : { ended: (runId: string) => this.turnEnded(runId) }),
      }),
    ]).then(() => this.scheduler.start(this.driver));
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
    options?: RunOptions,
  ): Promise<RunHandle<S>> {
    await this.open();
    return this.client.start(flow, shared, options);
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    return this.client.get(runId);
  }

  async list(options?: ListRunsOptions): Promise<RunSummary[]> {
    return this.client.list(options);
  }

  /**
   * Resolves when run `runId` has ended.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown id; RESULT_TIMEOUT after `timeoutMs` (real time).
   */
  async result(runId: string, options?: ResultOptions): Promise<RunResult> {
    await this.open();
    return this.client.result(runId, options);
  }

  /**
   * Cancels the run now: its status becomes `cancelled`, the `exec` in flight is aborted, and the
   * step in flight commits nothing (it stops at that step boundary). No-op once ended. The
   * run's event log names `options.by` (see {@link Engine.cancel}).
   * @throws QueueflowError RUN_NOT_FOUND for an unknown run id.
   */
  async cancel(runId: string, options?: CancelOptions): Promise<void> {
    return this.client.cancel(runId, options);
  }

  /**
   * Sends `body` to the mailbox at `address` from outside any run (a person or a service
   * answering an agent); wakes a run parked on it.
   *
   * @returns the message's id (the `id` its receiver sees).
   * @throws QueueflowError NOT_JSON for a body that would not survive JSON; TypeError for a bad address.
   */
  async send(address: string, body: Json, options?: EngineSendOptions): Promise<string> {
    await this.open();
    return this.agentClient.send(address, body, options);
  }

  /** @see Engine.ask */
  async ask(address: string, body: Json, options?: AskOptions): Promise<Message | undefined> {
    await this.open();
    return this.agentClient.ask(address, body, options);
  }

  /** @see Engine.publish */
  async publish(topic: string, body: Json, options?: PublishOptions): Promise<PublishResult> {
    await this.open();
    return this.agentClient.publish(topic, body, options);
  }

  /** @see Engine.conversation */
  async conversation(id: string): Promise<ConversationInfo | undefined> {
    return this.agentClient.conversation(id);
  }

  /** @see Engine.forkConversation */
  async forkConversation(id: string, options: ForkConversationOptions): Promise<ConversationFork> {
    return this.agentClient.forkConversation(id, options);
  }

  /** @see Engine.memory */
  async memory(name: string): Promise<MemoryInfo> {
    return memoryInfo(this.memories, name);
  }

  /** @see Engine.conversations */
  async conversations(options?: { limit?: number; cursor?: string }): Promise<{ ids: string[]; cursor?: string }> {
    return this.agentClient.conversationIds(options);
  }

  /** @see Engine.agent */
  async agent(ref: string): Promise<AgentInfo | undefined> {
    return this.agentClient.agent(ref);
  }

  /** @see Engine.agents */
  async agents(options?: ListAgentsOptions): Promise<AgentPage> {
    return this.agentClient.agents(options);
  }

  /** @see Engine.query */
  async query(ref: string, name: string, arg?: Json): Promise<unknown> {
    return this.agentClient.query(ref, name, arg);
  }

  /** @see Engine.deleteAgent */
  async deleteAgent(ref: string): Promise<boolean> {
    await this.open();
    return this.agentClient.deleteAgent(ref);
  }

  /** @see Engine.redeliver */
  async redeliver(ref: string, messageId: string): Promise<void> {
    await this.open();
    return this.agentClient.redeliver(ref, messageId);
  }

  /** @see Engine.agentHistory */
  async agentHistory(ref: string): Promise<AgentTurnInfo[]> {
    return this.agentClient.agentHistory(ref);
  }

  /** A run ended: when it was an agent's turn, its key commits the turn and goes on. */
  private turnEnded(runId: string): void {
    void this.store
      .load(runId)
      .then((run) => (run?.turn ? this.agentRuntime.runEnded(run) : undefined))
      .catch((error: unknown) =>
        warn(
          'QF_AGENT_TURN_END_FAILED',
          `the end of turn run '${runId}' was not recorded: ${(error as Error).message}`,
        ),
      );
  }

  /** @see Engine.history */
  async history(runId: string): Promise<StepRecord[]> {
    return this.client.history(runId);
  }

  /** @see Engine.runEvents */
  async runEvents(runId: string): Promise<RunEvent[]> {
    return this.client.runEvents(runId);
  }

  /** @see Engine.retry */
  async retry(runId: string): Promise<RunHandle> {
    await this.open();
    return this.client.retry(runId);
  }

  /** @see Engine.fork */
  async fork(runId: string, options: ForkOptions): Promise<RunHandle> {
    await this.open();
    return this.client.fork(runId, options);
  }

  /** This engine: the one worker that runs its steps. */
  async workers(): Promise<WorkerInfo[]> {
    return [{ ...this.self, active: this.scheduler.active, lastSeenAt: this.clock.now() }];
  }

  /** @see Engine.budgets */
  async budgets(): Promise<BudgetInfo[]> {
    return this.client.budgets();
  }

  /** @see Engine.queues */
  async queues(): Promise<QueueInfo[]> {
    return this.client.queues(await this.workers());
  }

  /** @see Engine.mailboxes */
  async mailboxes(options?: MailboxesOptions): Promise<MailboxInfo[]> {
    return this.client.mailboxes(options);
  }

  /** @see Engine.answer */
  async answer(address: string, messageId: string, body: Json): Promise<void> {
    await this.open();
    return this.client.answer(address, messageId, body);
  }

  /** @see Engine.watch */
  async watch(listener: (change: RunChange) => void, options?: WatchOptions): Promise<() => void> {
    return this.client.watch(listener, options);
  }

  /** @see Engine.sharedAt */
  async sharedAt(runId: string, step: number): Promise<JsonObject> {
    return this.client.sharedAt(runId, step);
  }

  /** @see Engine.children */
  async children(runId: string, options?: { offset?: number; limit?: number }): Promise<ChildSummary[]> {
    return this.client.children(runId, options);
  }

  /** @see Engine.stream */
  async *stream(runId: string, options?: StreamOptions): AsyncGenerator<StreamEntry, void, undefined> {
    await this.open();
    yield* this.client.stream(runId, options);
  }

  /** @see Engine.graph */
  async graph(flow: string): Promise<FlowGraph | undefined> {
    return this.client.graph(flow);
  }

  /**
   * Starts runs on a schedule; the ticks are timers of this engine's clock and stop when it closes.
   * @throws QueueflowError `INVALID_OPTION`, `UNKNOWN_FLOW`, `NOT_JSON`.
   * @see Engine.schedule
   */
  async schedule<S extends object = JsonObject>(
    name: string,
    flow: FlowDefinition | string,
    options: ScheduleOptions,
    shared: S,
    runOptions?: ScheduleRunOptions,
  ): Promise<void> {
    await this.open();
    this.schedulesHere.upsert(checkSchedule(this.registry, name, flow, options, shared, runOptions));
  }

  /** Removes a schedule; whether there was one. @see Engine.unschedule */
  async unschedule(name: string): Promise<boolean> {
    return this.schedulesHere.remove(checkScheduleName(name));
  }

  /** The schedules, by name. @see Engine.schedules */
  async schedules(): Promise<ScheduleInfo[]> {
    return this.schedulesHere.list();
  }

  /** Stops: runs stay where they are; the `exec` in flight is aborted; awaited results reject. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.schedulesHere.close();
    this.unobserve();
    this.scheduler.close();
    void this.reminders.close();
    this.driver.abortAll(new QueueflowError('ENGINE_CLOSED', 'the engine was closed'));
    this.waiter.close();
  }

  private async open(): Promise<void> {
    if (this.closed) throw new QueueflowError('ENGINE_CLOSED', 'LocalEngine is closed');
    await this.ready;
  }
}

/**
 * The queues the registered flows' nodes name, the default one first: LocalEngine serves them all
 * in this process (a node's `queue` routes steps between workers on RedisEngine only).
 */
function queuesOf(registry: FlowRegistry): string[] {
  const queues = new Set([DEFAULT_QUEUE]);
  for (const name of registry.names())
    for (const node of registry.graph(name).nodes.values()) if (node.queue !== undefined) queues.add(node.queue);
  return [...queues];
}
