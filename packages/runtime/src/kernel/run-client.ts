import { nanoid } from 'nanoid';
import { QueueflowError } from '../errors/queueflow-error.js';
import { warn } from '../core/warnings.js';
import type { FlowDefinition, FlowRegistry } from '../interpreter/flow-definition.js';
import type { Checkpoint } from '../interpreter/checkpoint.js';
import type { Json, JsonObject } from '../json/json.js';
import { initialCheckpoint } from '../interpreter/walk.js';
import { checkAddress, checkMessageBody, type Message, type SendOptions } from '../mailbox/message.js';
import { cancelRun } from './cancel-run.js';
import type { Clock } from './clock.js';
import { decodeCheckpoint, decodeShared, encodeCheckpoint, isDeltaCheckpoint } from './codec.js';
import { ClaimCheck, DEFAULT_LARGE_VALUE_BYTES } from './claim-check.js';
import { LargeValues } from './large-values.js';
import { runErrorOf } from '../errors/error-record.js';
import { flowGraphOf } from '../interpreter/mermaid.js';
import type {
  ChildSummary,
  FlowGraph,
  ForkOptions,
  ListRunsOptions,
  ResultOptions,
  MailboxesOptions,
  MailboxInfo,
  RunChange,
  WatchOptions,
  RunHandle,
  RunInfo,
  RunOptions,
  RunResult,
  RunSummary,
  StepRecord,
  StreamEntry,
  StreamOptions,
  WorkerInfo,
  BudgetInfo,
  QueueInfo,
  CancelOptions,
  RunEvent,
} from './engine.js';
import { followStream } from './run-stream.js';
import { trace } from '@opentelemetry/api';
import { recordRunEnd } from '../telemetry/tracing.js';
import { startRun } from './start-run.js';
import { traceparentOf } from '../telemetry/trace-context.js';
import { checkStreamId } from '../stream/stream-entry.js';
import { Inbox } from './inbox.js';
import { retryRun } from './retry-run.js';
import type { RunEventSource } from './run-events.js';
import { TimeTravel } from './time-travel.js';
import { decodeRunEvent } from './run-event.js';
import { checkRunInput } from './run-input.js';
import { checkRunId, newRunId } from './run-id.js';
import { checkWellFormed } from '../core/well-formed.js';
import { queueOf, runInfoOf, runResultOf, runSummaryOf } from './run-info.js';
import { checkPriority } from './run-priority.js';
import { DEFAULT_QUEUE } from '../core/queue-name.js';
import { childRunId, isFinal, type NewRun, type RunStore, type StoredRun } from './run-store.js';
import type { ResultWaiter } from './result-waiter.js';
import { runIdOfTask, type Scheduler } from './scheduler.js';

export interface RunClientOptions {
  clock: Clock;
  /** Largest encoded checkpoint, in bytes. */
  maxCheckpointBytes: number;
  /**
   * Values in `shared` whose JSON is over this many bytes are stored once, apart (the claim
   * check, claim-check.ts); `Infinity`: none. @defaultValue 262144 (256 KiB)
   */
  largeValueBytes?: number;
  /** Where runs live, for messages naming an unknown run, e.g. `under prefix '{qf}'`. */
  where: string;
  /** How long a worker may go without a heartbeat and still count as live, in ms. */
  workerLapseMs: number;
  /**
   * Longest a follower of a run's stream waits for an entry before it looks at the run's status
   * again, in ms (a safety net: a run's end appends a marker that ends the wait at once).
   * @defaultValue 5000
   */
  streamPollMs?: number;
  /**
   * After how long a wait for a result with no live worker serving the run's flow warns
   * `QF_NO_WORKER`, in ms (real time); `undefined`: never (the engine runs its steps itself).
   */
  noWorkerWarningMs?: number;
}

/** Mailboxes one `deliver` writes to at once (a publish to many keys goes out in windows of these). */
const SEND_WINDOW = 256;

/** Longest idempotency key, in characters. */
const MAX_IDEMPOTENCY_KEY = 256;

/**
 * A new run's record, checked and encoded, not written anywhere yet: an engine may check input
 * before it connects to its store.
 *
 * @throws QueueflowError `NOT_JSON` naming the path, `UNKNOWN_FLOW`, `PAYLOAD_TOO_LARGE`.
 */
export function prepareRun(
  registry: FlowRegistry,
  flow: FlowDefinition | string,
  shared: object,
  options: RunOptions,
  settings: {
    clock: Clock;
    maxCheckpointBytes: number;
    largeValueBytes?: number;
    /** Hashes of values stored already (an agent's state holds them): their texts are not brought. */
    storedValues?: ReadonlySet<string>;
  },
): NewRun {
  const graph = registry.graph(flow);
  const input = checkRunInput(shared, options.params);
  const key = options.idempotencyKey;
  if (key !== undefined && (typeof key !== 'string' || key === '' || key.length > MAX_IDEMPOTENCY_KEY)) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `expected \`idempotencyKey\` to be a string of 1 to ${MAX_IDEMPOTENCY_KEY} characters, got ${typeof key === 'string' ? `${key.length} characters` : typeof key}`,
      { retryable: false },
    );
  }
  if (key !== undefined) checkWellFormed('start', 'idempotencyKey', key);
  const priority = checkPriority(options.priority);
  const { checkpoint, target } = initialCheckpoint(graph, input.shared, input.params);
  const claim = new ClaimCheck(settings.largeValueBytes ?? DEFAULT_LARGE_VALUE_BYTES);
  const encoded = encodeCheckpoint(checkpoint, settings.maxCheckpointBytes, undefined, claim);
  const values = claim.claim(settings.storedValues);
  return {
    id: newRunId(),
    flow: graph.flowName,
    fingerprint: graph.fingerprint,
    checkpoint: encoded,
    target,
    now: settings.clock.now(),
    ...(key === undefined ? {} : { idempotencyKey: key }),
    ...(values === undefined ? {} : { values }),
    ...(priority === undefined ? {} : { priority }),
  };
}

/**
 * The client side of the run kernel: what `Engine` promises (start, get, list, result, cancel,
 * send), written once over a {@link RunStore} and a {@link Scheduler}. `LocalEngine` and
 * `RedisEngine` are this client plus the store, scheduler and connections they own.
 */
export class RunClient {
  private readonly timeTravel: TimeTravel;
  /** Flows already warned about with QF_NO_WORKER. */
  private readonly warnedNoWorker = new Set<string>();
  private readonly inbox: Inbox;
  private readonly values: LargeValues;

  constructor(
    private readonly store: RunStore,
    private readonly scheduler: Scheduler,
    private readonly registry: FlowRegistry,
    private readonly waiter: ResultWaiter,
    private readonly events: RunEventSource,
    private readonly options: RunClientOptions,
  ) {
    this.values = new LargeValues(store, options.largeValueBytes ?? DEFAULT_LARGE_VALUE_BYTES);
    this.timeTravel = new TimeTravel(
      store,
      registry,
      (run) => this.checkpointOf(run),
      (id) => this.notFound(id),
      {
        now: () => options.clock.now(),
        maxCheckpointBytes: options.maxCheckpointBytes,
      },
      this.values,
    );
    this.inbox = new Inbox(store, async (address, body, conversation) => {
      const message = this.newMessage(body);
      if (conversation !== undefined) message.conversation = conversation;
      await this.deliver([address], message);
    });
  }

  /**
   * Starts a run: checks its input, writes its record and adds its first step.
   * @throws QueueflowError `NOT_JSON` naming the path, `UNKNOWN_FLOW`, `PAYLOAD_TOO_LARGE`; nothing is written then.
   */
  async start<S extends object>(
    flow: FlowDefinition | string,
    shared: S,
    options: RunOptions = {},
  ): Promise<RunHandle<S>> {
    return this.startPrepared(prepareRun(this.registry, flow, shared, options, this.options));
  }

  /**
   * Starts a run {@link prepareRun} has checked; with an idempotency key another run holds, the
   * handle of that run instead.
   */
  async startPrepared<S extends object>(run: NewRun): Promise<RunHandle<S>> {
    const { runId } = await startRun(this.store, this.scheduler, run, this.options.clock.now());
    return this.handle<S>(runId);
  }

  /** A handle on run `runId`. */
  handle<S extends object = JsonObject>(runId: string): RunHandle<S> {
    return { id: runId, result: (options) => this.result(runId, options) as Promise<RunResult<S>> };
  }

  /**
   * Resolves when run `runId` has ended. Warns `QF_NO_WORKER` (once per flow) when no live worker
   * serves its flow while it waits.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown id; RESULT_TIMEOUT after `timeoutMs`.
   */
  async result(runId: string, options: ResultOptions = {}): Promise<RunResult> {
    checkRunId('result', runId);
    const timeoutMs = options.timeoutMs;
    if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
      throw new QueueflowError(
        'INVALID_OPTION',
        `expected \`timeoutMs\` to be a number of ms from 0, got ${String(timeoutMs)}`,
      );
    }
    const timers: ReturnType<typeof setTimeout>[] = [];
    const waits: Promise<RunResult>[] = [this.waiter.wait(runId)];
    if (this.options.noWorkerWarningMs !== undefined) {
      const timer = setTimeout(() => void this.warnIfNoWorker(runId).catch(() => {}), this.options.noWorkerWarningMs);
      timer.unref?.();
      timers.push(timer);
    }
    if (timeoutMs !== undefined) {
      waits.push(
        new Promise<never>((_, reject) => {
          const timer = setTimeout(
            () =>
              reject(
                new QueueflowError(
                  'RESULT_TIMEOUT',
                  `run '${runId}' had not ended after ${timeoutMs} ms (it goes on)`,
                  {
                    retryable: false,
                  },
                ),
              ),
            timeoutMs,
          );
          timers.push(timer);
        }),
      );
    }
    try {
      return await Promise.race(waits);
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
  }

  /** Warns once per flow when the run still waits and no live worker serves its flow. */
  private async warnIfNoWorker(runId: string): Promise<void> {
    const [run] = await this.store.summaries([runId]);
    if (!run || isFinal(run.status) || this.warnedNoWorker.has(run.flow)) return;
    const workers = await this.workers();
    const queue = queueOf(run.target);
    if (workers.some((worker) => worker.flows.includes(run.flow))) {
      if (run.status === 'waiting') return;
      const served = new Set(workers.flatMap((worker) => worker.queues));
      if (served.has(queue)) return;
      this.warnedNoWorker.add(run.flow);
      warn(
        'QF_NO_WORKER',
        `run '${runId}' of flow '${run.flow}' has waited ${this.options.noWorkerWarningMs} ms: ${noWorkerFor(queue, served)}`,
      );
      return;
    }
    this.warnedNoWorker.add(run.flow);
    warn(
      'QF_NO_WORKER',
      `run '${runId}' of flow '${run.flow}' has waited ${this.options.noWorkerWarningMs} ms and no live worker serves '${run.flow}' ${this.options.where}` +
        (workers.length === 0
          ? ' (no worker is running: start one with `queueflow worker --flows <module>`)'
          : ` (live workers serve: ${[...new Set(workers.flatMap((w) => w.flows))].join(', ')})`),
    );
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    const record = await this.store.record(checkRunId('get', runId));
    if (!record) return undefined;
    let shared: JsonObject = {};
    try {
      shared = (await this.checkpointOf(record.run)).shared;
    } catch {
      // A child whose parent's snapshot expired: reported without shared.
    }
    const [info] = await this.withNoWorker([runInfoOf(record, shared)]);
    return info;
  }

  async list(options: ListRunsOptions = {}): Promise<RunSummary[]> {
    const runs = await this.store.list({ ...options, limit: options.limit ?? 100 });
    return this.withNoWorker(runs.map(runSummaryOf));
  }

  /**
   * The runs, each whose next step waits on a queue no live worker serves marked so
   * (`noWorker`). Only where workers elsewhere run the steps (`noWorkerWarningMs` is set): an
   * engine that runs its steps itself serves every queue. One read of the workers per call.
   */
  private async withNoWorker<T extends RunSummary>(runs: T[]): Promise<T[]> {
    if (this.options.noWorkerWarningMs === undefined) return runs;
    if (!runs.some((run) => run.queue !== undefined)) return runs;
    const workers = await this.workers();
    const served = new Set(workers.flatMap((worker) => worker.queues));
    return runs.map((run) =>
      run.queue === undefined || served.has(run.queue) ? run : { ...run, noWorker: noWorkerFor(run.queue, served) },
    );
  }

  /** @throws QueueflowError RUN_NOT_FOUND for an unknown (or expired) run id. */
  async cancel(runId: string, options: CancelOptions = {}): Promise<void> {
    const result = await cancelRun(this.store, this.scheduler, checkRunId('cancel', runId), options.by);
    if (result === 'missing') throw this.notFound(runId);
    if (result !== 'ended') {
      const run = await this.store.load(runId);
      if (run?.trace) recordRunEnd(run, 'cancelled', run.finishedAt ?? this.options.clock.now());
    }
  }

  /**
   * Sends `body` to the mailbox at `address` from outside any run; runs parked on it wake.
   * Returns the message's id.
   * @throws QueueflowError `NOT_JSON`, `PAYLOAD_TOO_LARGE`; TypeError for a bad address.
   */
  async send(address: string, body: Json, options: SendOptions = {}): Promise<string> {
    checkAddress('send', address);
    checkMessageBody(body, `message body sent to '${address}'`);
    if (options.replyTo !== undefined) checkAddress('send', options.replyTo, 'replyTo');
    const message = this.newMessage(body);
    if (options.replyTo !== undefined) message.replyTo = options.replyTo;
    await this.deliver([address], message);
    return message.id;
  }

  /**
   * A message from outside any run, with a fresh id and the trace context of the caller's span.
   * `body` must have been checked (checkMessageBody).
   */
  newMessage(body: Json): Message {
    const span = trace.getActiveSpan();
    const sender = span ? traceparentOf(span) : undefined;
    return {
      id: `m.${nanoid()}`,
      body,
      sentAt: this.options.clock.now(),
      ...(sender === undefined ? {} : { trace: sender }),
    };
  }

  /**
   * Appends `message` (one id) to each mailbox of `addresses`, {@link SEND_WINDOW} at a time,
   * and wakes the runs parked there. A process that dies part way has delivered a prefix.
   */
  async deliver(addresses: readonly string[], message: Message): Promise<void> {
    for (let first = 0; first < addresses.length; first += SEND_WINDOW) {
      const window = addresses.slice(first, first + SEND_WINDOW);
      const replies = await Promise.all(window.map((address) => this.store.send(address, message)));
      await this.scheduler.promote(replies.flatMap((reply) => reply.wakes));
    }
  }

  /** Wakes the runs of `wakeIds` (parked runs a send reached: RunStore.send, AgentStore.send). */
  async promote(wakeIds: readonly string[]): Promise<void> {
    if (wakeIds.length > 0) await this.scheduler.promote([...wakeIds]);
  }

  /** See {@link Engine.history}. */
  async history(runId: string): Promise<StepRecord[]> {
    return this.timeTravel.history(checkRunId('history', runId));
  }

  /** See {@link Engine.runEvents}. */
  async runEvents(runId: string): Promise<RunEvent[]> {
    const events = await this.store.events(checkRunId('runEvents', runId));
    if (!events) throw this.notFound(runId);
    return events.map(decodeRunEvent).filter((event) => event !== undefined);
  }

  /** See {@link Engine.sharedAt}. */
  async sharedAt(runId: string, step: number): Promise<JsonObject> {
    return this.timeTravel.sharedAt(checkRunId('sharedAt', runId), step);
  }

  /** See {@link Engine.fork}. */
  async fork(runId: string, options: ForkOptions): Promise<RunHandle> {
    return this.startPrepared(await this.timeTravel.forkOf(checkRunId('fork', runId), options));
  }

  /** See {@link Engine.retry}. */
  async retry(runId: string): Promise<RunHandle> {
    await retryRun(this.store, this.scheduler, checkRunId('retry', runId), (id) => this.notFound(id));
    return this.handle(runId);
  }

  /** The live workers, from their heartbeats. */
  async workers(): Promise<WorkerInfo[]> {
    const workers = await this.store.workers(this.options.workerLapseMs);
    // A worker from before queues were named serves the default queue.
    return workers.map(({ meta, ...worker }) => ({
      ...worker,
      queues: worker.queues ?? [DEFAULT_QUEUE],
      ...(meta?.loopLagMs === undefined ? {} : { loopLagMs: Number(meta.loopLagMs) }),
    }));
  }

  /** See {@link Engine.budgets}. */
  async budgets(): Promise<BudgetInfo[]> {
    const keys = await this.store.budgetKeys();
    const budgets = await Promise.all(
      keys.map(async ({ key, concurrency, rate, usedAt }): Promise<BudgetInfo> => {
        const state = await this.store.budgetOf(key, rate?.perMs ?? 0);
        return {
          key,
          inUse: state.leases,
          ...(concurrency === undefined ? {} : { concurrency }),
          unitsInWindow: state.unitsInWindow,
          ...(rate === undefined ? {} : { rate }),
          waiting: [...new Set(state.waiters.map(runIdOfTask))],
          ...(state.heldUntil === undefined ? {} : { heldUntil: state.heldUntil }),
          usedAt,
        };
      }),
    );
    return budgets.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * See {@link Engine.queues}. `live`: the engine's workers when they are not the store's
   * heartbeats (LocalEngine: itself).
   */
  async queues(live?: WorkerInfo[]): Promise<QueueInfo[]> {
    const [counts, workers, budgets] = await Promise.all([
      this.scheduler.queueCounts?.() ?? Promise.resolve([]),
      live ?? this.workers(),
      this.budgets(),
    ]);
    // Throttled runs, by the queue of the step they wait to run.
    const waiting = [...new Set(budgets.flatMap((budget) => budget.waiting))];
    const throttled = new Map<string, number>();
    for (const run of await this.store.summaries(waiting)) {
      if (run?.status !== 'throttled') continue;
      const queue = queueOf(run.target);
      throttled.set(queue, (throttled.get(queue) ?? 0) + 1);
    }
    const names = new Set([
      DEFAULT_QUEUE,
      ...counts.map((count) => count.queue),
      ...workers.flatMap((worker) => worker.queues),
      ...throttled.keys(),
    ]);
    return [...names].map((name) => {
      const count = counts.find((c) => c.queue === name);
      return {
        name,
        waiting: count?.waiting ?? 0,
        delayed: count?.delayed ?? 0,
        throttled: throttled.get(name) ?? 0,
        running: count?.running ?? 0,
        workers: workers.filter((worker) => worker.queues.includes(name)).map((worker) => worker.id),
      };
    });
  }

  /** See {@link Engine.mailboxes}. */
  mailboxes(options: MailboxesOptions = {}): Promise<MailboxInfo[]> {
    return this.inbox.mailboxes(options.messages);
  }

  /** See {@link Engine.answer}. */
  answer(address: string, messageId: string, body: Json): Promise<void> {
    return this.inbox.answer(address, messageId, body);
  }

  /** See {@link Engine.watch}. */
  watch(listener: (change: RunChange) => void, options: WatchOptions = {}): Promise<() => void> {
    return this.events.subscribe({ changed: listener, ...(options.resync ? { resync: options.resync } : {}) });
  }

  /** See {@link Engine.children}. */
  async children(runId: string, options: { offset?: number; limit?: number } = {}): Promise<ChildSummary[]> {
    const offset = options.offset ?? 0;
    const limit = options.limit ?? 100;
    const fanOut = await this.store.fanOutOf(checkRunId('children', runId));
    if (!fanOut) return [];
    const indices = Array.from({ length: Math.max(0, Math.min(limit, fanOut.total - offset)) }, (_, i) => offset + i);
    if (fanOut.request.kind === 'runs') {
      const ids = indices.map((index) => childRunId(runId, fanOut.step, index));
      const runs = await this.store.summaries(ids);
      const outcomes = await this.store.outcomesOf(runId, fanOut.total);
      return indices.map((index, i) => {
        const run = runs[i];
        if (!run) {
          // Not started yet (records are made as children start), or its record expired.
          const outcome = outcomes[index];
          if (!outcome) return { index, runId: ids[i]!, status: 'queued' as const };
          const error = outcome.status === 'failed' ? { error: runErrorOf(outcome.error) } : {};
          return { index, runId: ids[i]!, status: outcome.status, ...error };
        }
        return {
          index,
          runId: run.id,
          status: run.status,
          ...(run.startedAt === undefined ? {} : { startedAt: run.startedAt }),
          ...(run.finishedAt === undefined ? {} : { finishedAt: run.finishedAt }),
          ...(run.error ? { error: run.error } : {}),
        };
      });
    }
    const outcomes = await this.store.outcomesOf(runId, fanOut.total);
    return indices.map((index) => {
      const outcome = outcomes[index];
      if (!outcome) return { index, status: index < fanOut.started ? ('running' as const) : ('queued' as const) };
      if (outcome.status !== 'failed') return { index, status: outcome.status };
      return { index, status: 'failed' as const, error: runErrorOf(outcome.error) };
    });
  }

  /** See {@link Engine.stream}. */
  async *stream(runId: string, options: StreamOptions = {}): AsyncGenerator<StreamEntry, void, undefined> {
    checkRunId('stream', runId);
    const after = options.from === undefined ? '0-0' : checkStreamId('from', options.from);
    yield* followStream(this.store, runId, after, {
      pollMs: this.options.streamPollMs ?? 5000,
      notFound: () => this.notFound(runId, ' (never started, or expired)'),
    });
  }

  /** See {@link Engine.graph}. */
  async graph(flow: string): Promise<FlowGraph | undefined> {
    if (!this.registry.names().includes(flow)) return undefined;
    return flowGraphOf(this.registry.graph(flow));
  }

  /** The run's result once it has ended; `undefined` while it runs. @throws QueueflowError RUN_NOT_FOUND. */
  async resultIfEnded(runId: string): Promise<RunResult | undefined> {
    const position = await this.store.position(runId);
    if (!position) throw this.notFound(runId, ' (never started, or expired)');
    if (!isFinal(position.status)) return undefined;
    const run = await this.store.load(runId);
    if (!run || !isFinal(run.status)) return undefined;
    const { shared } = await this.checkpointOf(run);
    return runResultOf(run as StoredRun & { status: typeof run.status }, shared);
  }

  /**
   * The run's checkpoint. @throws QueueflowError RUN_NOT_FOUND for a fan-out child whose parent has
   * merged it: its `shared` was a delta against the parent's snapshot, which went at the fan-in.
   */
  private async checkpointOf(run: StoredRun): Promise<Checkpoint> {
    const snapshot = run.parent ? await this.store.snapshotOf(run.parent.id) : undefined;
    if (run.parent && snapshot === undefined && isDeltaCheckpoint(run.checkpoint)) {
      throw new QueueflowError(
        'RUN_NOT_FOUND',
        `run '${run.id}' is a fan-out child that its parent '${run.parent.id}' has merged: its shared store went with the fan-out's snapshot (see the parent's history)`,
        { retryable: false },
      );
    }
    const whole =
      snapshot === undefined
        ? undefined
        : await this.values.inflateOf(snapshot, { id: run.parent!.id, flow: run.flow });
    return decodeCheckpoint(
      await this.values.inflateOf(run.checkpoint, run),
      () => (whole === undefined ? undefined : decodeShared(whole)),
      run,
    );
  }

  private notFound(runId: string, why = ''): QueueflowError {
    return new QueueflowError('RUN_NOT_FOUND', `no run '${runId}' ${this.options.where}${why}`);
  }
}

/** What a run whose next step waits on `queue` says when no live worker serves it. */
function noWorkerFor(queue: string, served: ReadonlySet<string>): string {
  return (
    `no live worker serves queue '${queue}'` +
    (served.size === 0
      ? ' (no worker is running)'
      : ` (live workers serve: ${[...served].join(', ')}); start one with \`queueflow worker --queues ${queue}\``)
  );
}
