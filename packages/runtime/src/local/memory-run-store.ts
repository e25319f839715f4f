import type { ErrorRecord } from '../errors/error-record.js';
import type { Json } from '../json/json.js';
import type { ChildOutcome, OutgoingMessage, ParkRequest, StepReplay, StepTarget } from '../interpreter/step-types.js';
import type { Message, Received } from '../mailbox/message.js';
import {
  decodeConflict,
  decodeErrorRecord,
  decodeJson,
  decodeMessage,
  decodeOutcome,
  decodeRequest,
  encodeConflict,
  encodeErrorRecord,
  encodeMessage,
  encodeOutcome,
  encodeRequest,
} from '../kernel/codec.js';
import type { TurnEnd } from '../agent/agent-store.js';
import type { Clock } from '../kernel/clock.js';
import { taskId } from '../kernel/scheduler.js';
import type { ValueClaim } from '../kernel/claim-check.js';
import type { BudgetHold, BudgetKeyInfo, BudgetReply, BudgetRequest, BudgetState } from '../kernel/budget-store.js';
import { MemoryBudgets } from './memory-budgets.js';
import { logRunEvent, logWoken, type MemoryRunLog } from './memory-run-log.js';
import { parkedEvent, sameParkAs } from '../kernel/run-event.js';
import type { FinalRunStatus, ListRunsOptions, RunStatus } from '../kernel/engine.js';
import type { StreamEntry } from '../stream/stream-types.js';
import { compareStreamIds } from '../stream/stream-entry.js';
import type { RunEventListener, RunEventSource } from '../kernel/run-events.js';
import {
  MAX_ERRORS_KEPT,
  childOutcomeOf,
  childRunId,
  isFinal,
  newRunRecord,
  wakeId,
  type LoadedRun,
  type ReopenReply,
  type StoredMailbox,
  type StoredWorker,
  type WorkerBeat,
  type CancelResult,
  type ChildEndReport,
  type ChildRange,
  type ChildEndedResult,
  type ChildReport,
  type CommitFields,
  type CommitMode,
  type CommitReply,
  type FanOutCommit,
  type NewRun,
  type ParkReply,
  type RunRecord,
  type RunStore,
  type Runnable,
  type StoredFanOut,
  type StoredRun,
  type StoredStreamEntry,
  type StreamAppendReply,
  type StreamWrite,
  DEFAULT_MAX_STREAM_ENTRIES,
} from '../kernel/run-store.js';

interface MemoryFanOut {
  request: string;
  snapshot: string;
  total: number;
  started: number;
  ended: number;
  failed: number;
  step: number;
  /** See FanOutCommit. */
  window: number;
  refill: number;
  /** Runs: the children's first target. */
  childTarget?: StepTarget;
  /** When the fan-out began (the children's createdAt). */
  at: number;
  kind: 'runs' | 'items';
}

/** The tries of a step a run's record keeps (as append-stream.lua's MAX_TRIES). */
const MAX_STREAM_TRIES = 16;

/** One run in memory: the record and the lists and hashes Redis keeps beside it, encoded alike. */
interface MemoryRun extends MemoryRunLog {
  run: StoredRun;
  errors: string[];
  conflicts: string[];
  fanOut?: MemoryFanOut;
  /** Child index → encoded outcome, while waiting on a fan-out. */
  outcomes: Map<number, string>;
  /** Messages reserved by the current step, by receive ordinal. */
  reserved: Map<number, { address: string; message: string }>;
  /** Encoded step records, oldest first. */
  history: string[];
  idempotencyKey?: string;
  /** The run's stream, oldest first (entries keep their data encoded), capped. */
  stream: { id: string; end?: FinalRunStatus; entry?: Omit<StreamEntry, 'id' | 'data'> & { data: string } }[];
  /**
   * The tries of one step that wrote the stream (appendStream), oldest first, the last the latest
   * writer (`run.streamWriter`); `ended` once a transition of that step ended the latest.
   */
  streamTry?: { step: number; tries: { token: string; attempt: number; worker: string }[]; ended: boolean };
  /** A follower of its stream came while it went on (followStream): its end is marked. */
  followed?: boolean;
  /** Hashes of the values stored apart its transitions claimed (released when it is dropped). */
  values?: Set<string>;
}

/**
 * The run store in this process's memory (LocalEngine): each operation the same atomic transition
 * as the Redis store's Lua script of the same name, with the same result codes, kept in maps and
 * run synchronously (nothing interleaves inside one). Values cross it encoded, as they cross Redis,
 * so what works here survives the Redis engine too. Finished runs beyond `retainFinishedRuns` are
 * dropped, oldest first.
 */
export class MemoryRunStore implements RunStore, RunEventSource {
  private readonly runs = new Map<string, MemoryRun>();
  private readonly finished: string[] = [];
  private readonly queues = new Map<string, string[]>();
  /** Wake ids of the runs parked on each address. */
  private readonly waiters = new Map<string, Set<string>>();
  /** Wait-for edges: agent → the ask its parked turn waits on (ParkRequest.ask), while that park lasts. */
  private readonly asking = new Map<string, { to: string; runId: string; wake: string; address: string }>();
  /** Who waits for a message at an address from outside any run (`engine.ask`). */
  private readonly arrivals = new Map<string, Set<() => void>>();
  private readonly listeners = new Set<RunEventListener>();
  /** Idempotency key → the run that holds it. */
  private readonly idempotency = new Map<string, string>();
  private readonly registry = new Map<string, StoredWorker>();
  /** Wakes each worker took (direct hand-off), by worker id. */
  private readonly taken = new Map<string, Set<string>>();
  /** The last stream id handed out (`<ms>-<seq>`), so ids only grow, as Redis' do. */
  private lastStreamId = { ms: 0, seq: 0 };
  /** Blocked `readStream` calls, by run id: called when the run's stream grows (or it goes). */
  private readonly streamWaiters = new Map<string, Set<() => void>>();
  /** Staged inputs of fan-outs, by `<run id>:<step>` (see stageInputs). */
  private readonly inputs = new Map<string, (string | undefined)[]>();
  /**
   * Values stored apart (the claim check), by hash: the text and the runs (and keyed agents, by
   * address: keepValues) that claimed it, a reference count by name; a value goes with the last
   * of them (see RunStore.values).
   */
  private readonly stored = new Map<string, { text: string; runs: Set<string> }>();
  /** Flow control: the budgets of nodes' `limits`. */
  private readonly budgets: MemoryBudgets;

  /**
   * Ends an agent's turn in the commit of its run's last step (CommitFields.turnEnd): the agent
   * store's endTurn, synchronous, set by the engine that owns both stores.
   */
  endTurns: ((ref: string, end: TurnEnd) => NonNullable<CommitReply['turnEnded']>) | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly retainFinishedRuns: number,
    private readonly maxStepRecords: number,
    /** Stream entries kept per run, oldest dropped first. */
    private readonly maxStreamEntries: number = DEFAULT_MAX_STREAM_ENTRIES,
  ) {
    this.budgets = new MemoryBudgets(clock, (runId) => {
      const run = this.runs.get(runId)?.run;
      const entry = this.runs.get(runId);
      if (run?.status !== 'throttled' || !entry) return;
      logRunEvent(entry, { at: clock.now(), step: run.step, kind: 'released', key: run.throttledBy ?? '' });
      run.status = 'running';
      delete run.throttledBy;
      this.changed(runId);
    });
  }

  async subscribe(listener: RunEventListener): Promise<() => void> {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async create(run: NewRun): Promise<{ created: true } | { created: false; runId: string }> {
    if (run.idempotencyKey !== undefined) {
      const holder = this.idempotency.get(run.idempotencyKey);
      if (holder !== undefined && this.runs.has(holder)) return { created: false, runId: holder };
      this.idempotency.set(run.idempotencyKey, run.id);
    }
    this.runs.set(run.id, {
      run: newRunRecord(run),
      errors: [],
      conflicts: [],
      outcomes: new Map(),
      reserved: new Map(),
      history: [],
      stream: [],
      ...(run.idempotencyKey === undefined ? {} : { idempotencyKey: run.idempotencyKey }),
    });
    if (run.forkedFrom)
      logRunEvent(this.runs.get(run.id)!, { at: run.now, step: 0, kind: 'forked', from: { ...run.forkedFrom } });
    this.claim(run.id, run.values);
    if (run.takenBy !== undefined) this.addTaken(run.takenBy, taskId({ type: 'step', runId: run.id, step: 0 }));
    this.changed(run.id);
    return { created: true };
  }

  async discard(runId: string): Promise<void> {
    const entry = this.runs.get(runId);
    if (entry?.idempotencyKey !== undefined) this.idempotency.delete(entry.idempotencyKey);
    if (entry) this.release(runId, entry);
    this.runs.delete(runId);
  }

  async load(runId: string): Promise<StoredRun | undefined> {
    const entry = this.runs.get(runId);
    return entry && copyOf(entry.run);
  }

  async position(runId: string): Promise<{ status: RunStatus; step: number } | undefined> {
    const run = this.runs.get(runId)?.run;
    return run && { status: run.status, step: run.step };
  }

  async followStream(runId: string): Promise<{ status: RunStatus; step: number } | undefined> {
    const entry = this.runs.get(runId);
    if (!entry) return undefined;
    if (!isFinal(entry.run.status)) entry.followed = true;
    return { status: entry.run.status, step: entry.run.step };
  }

  async loadForStep(runId: string, runnable: readonly Runnable[], wake?: number): Promise<LoadedRun | undefined> {
    const entry = this.runs.get(runId);
    if (!entry) return undefined;
    const { run } = entry;
    const parked = run.replay.parked;
    if (wake !== undefined && run.status === 'waiting' && parked && run.parkCount === wake) {
      // A receive's own message, reserved now (a receiveAny reserves it when it runs again).
      if (!entry.reserved.has(parked.ordinal) && parked.addresses === undefined)
        await this.reserveMessage(run, parked.ordinal, parked.address);
      const reserved = new Map<number, Message>();
      for (const [ordinal, held] of entry.reserved) reserved.set(ordinal, decodeMessage(held.message));
      return { ...copyOf(run), reserved };
    }
    if (
      run.status === 'queued' &&
      runnable.some(([flow, fingerprint]) => flow === run.flow && fingerprint === run.fingerprint)
    ) {
      const now = this.clock.now();
      run.status = 'running';
      run.startedAt = now;
      run.updatedAt = now;
    }
    return copyOf(run);
  }

  async commit(at: StoredRun, mode: CommitMode, fields: CommitFields, report?: ChildReport): Promise<CommitReply> {
    const wakes: string[] = [];
    const entry = this.runs.get(at.id);
    if (!entry) return { result: 'missing', wakes };
    const { run } = entry;
    if (isFinal(run.status) || !atStep(run, at)) return { result: 'stale', wakes };
    this.endStreamTry(entry);
    logWoken(entry, run, entry.reserved, fields.now);
    if (run.status === 'throttled' && mode !== 'throttled')
      logRunEvent(entry, { at: fields.now, step: run.step, kind: 'released', key: run.throttledBy ?? '' });
    this.leaveWaiters(run, wakes);
    const toParent = (outcome: ChildOutcome | undefined): ChildEndedResult | undefined => {
      if (!report) return undefined;
      const { parent } = report;
      const result = this.recordChildEnd(parent.id, parent.step, parent.index, {
        ...report,
        ...(outcome ? { outcome } : {}),
      });
      // The worker takes the first child the end starts (see commit-step.lua's takeChild).
      if (result.type !== 'recorded' || !result.start || !report.take || fields.takenBy === undefined) return result;
      const [made] = this.makeChildren(parent.id, parent.step, [result.start.first]);
      if (made) this.addTaken(fields.takenBy, taskId({ type: 'step', runId: made.id, step: 0 }));
      return made ? { ...result, made } : result;
    };
    const records = fields.errorRecords ?? [];
    this.claim(at.id, fields.values);
    this.pushErrors(entry, records);
    for (const conflict of fields.conflicts ?? []) entry.conflicts.push(encodeConflict(conflict));
    run.updatedAt = fields.now;
    run.startedAt ??= fields.now;
    delete run.refusal; // a worker with the right code has taken the step

    if (mode === 'retry') {
      logRunEvent(entry, {
        at: fields.now,
        step: run.step,
        kind: 'retried',
        attempt: run.attempt,
        retryAt: fields.retryAt ?? fields.now,
      });
      if (fields.checkpoint) run.checkpoint = fields.checkpoint;
      if (fields.stepStartedAt !== undefined) run.stepStartedAt ??= fields.stepStartedAt;
      if (fields.retryAt !== undefined) run.retryAt = fields.retryAt;
      run.attempt++;
      run.status = 'running';
      return { result: 'committed', wakes };
    }
    if (mode === 'throttled') {
      if (run.status !== 'throttled')
        logRunEvent(entry, { at: fields.now, step: run.step, kind: 'throttled', key: fields.throttledBy ?? '' });
      if (fields.checkpoint) run.checkpoint = fields.checkpoint;
      if (fields.stepStartedAt !== undefined) run.stepStartedAt ??= fields.stepStartedAt;
      run.status = 'throttled';
      run.throttledBy = fields.throttledBy ?? '';
      this.changed(run.id);
      return { result: 'committed', wakes };
    }
    if (mode === 'failed') {
      if (fields.runError) run.error = { ...fields.runError };
      const last = records[records.length - 1];
      // A step that failed in exec: its last try counts among the step's tries.
      if (last?.attempt !== undefined) run.attempt = last.attempt + 1;
      this.releaseReserved(entry, wakes);
      this.finish(entry, 'failed', fields.now);
      return {
        result: 'committed',
        wakes,
        ...this.endTurnOf(fields),
        ...optional('parent', toParent(report?.outcome ?? childOutcomeOf(mode, fields))),
        ...this.take(fields.takenBy, wakes),
      };
    }
    // The step commits: what it received is consumed, what it sent leaves.
    entry.reserved.clear();
    this.deliver(fields.outbox ?? [], wakes);
    if (fields.record !== undefined) this.pushRecord(entry, fields.record);
    run.step++;
    run.attempt = 0;
    delete run.stepStartedAt;
    delete run.retryAt;
    run.replay = { sent: 0 };
    if (fields.checkpoint) run.checkpoint = fields.checkpoint;
    if (fields.target) run.target = { ...fields.target };
    // A fan-in: the outcomes and counters stay readable; the snapshot and inputs go (see commit-step.lua).
    if (entry.fanOut) {
      entry.fanOut.snapshot = '';
      this.inputs.delete(inputsKey(run.id, entry.fanOut.step));
    }
    if (mode === 'completed') {
      if (fields.lastAction !== undefined) run.lastAction = fields.lastAction;
      this.finish(entry, 'completed', fields.now);
      return {
        result: 'committed',
        wakes,
        ...this.endTurnOf(fields),
        ...optional('parent', toParent(report?.outcome ?? childOutcomeOf(mode, fields))),
        ...this.take(fields.takenBy, wakes),
      };
    }
    run.status = 'running';
    this.changed(run.id);
    return { result: 'committed', wakes, ...this.take(fields.takenBy, wakes) };
  }

  /** The turn's end the commit makes with the run's (see {@link MemoryRunStore.endTurns}). */
  private endTurnOf(fields: CommitFields): Pick<CommitReply, 'turnEnded'> {
    if (!fields.turnEnd || !this.endTurns) return {};
    return { turnEnded: this.endTurns(fields.turnEnd.agent, fields.turnEnd.end) };
  }

  async fanOut(at: StoredRun, fields: FanOutCommit): Promise<{ result: CommitReply['result']; wakes: string[] }> {
    const wakes: string[] = [];
    const entry = this.runs.get(at.id);
    if (!entry) return { result: 'missing', wakes };
    const { run } = entry;
    if (isFinal(run.status) || !atStep(run, at)) return { result: 'stale', wakes };
    this.endStreamTry(entry);
    logWoken(entry, run, entry.reserved, fields.now);
    this.claim(at.id, fields.values);
    this.leaveWaiters(run, wakes);
    entry.reserved.clear();
    this.deliver(fields.outbox, wakes);
    if (fields.record !== undefined) this.pushRecord(entry, fields.record);
    run.replay = { sent: 0 };
    delete run.stepStartedAt;
    delete run.retryAt;
    const step = ++run.step;
    Object.assign(run, {
      status: 'waiting',
      attempt: 0,
      checkpoint: fields.checkpoint,
      target: { ...fields.target },
      updatedAt: fields.now,
    });
    run.startedAt ??= fields.now;
    entry.outcomes.clear();
    entry.fanOut = {
      request: encodeRequest(fields.request),
      snapshot: fields.snapshot,
      total: fields.total,
      started: fields.startNow,
      ended: 0,
      failed: 0,
      step,
      window: fields.window,
      refill: fields.refill,
      ...(fields.childTarget ? { childTarget: { ...fields.childTarget } } : {}),
      at: fields.now,
      kind: fields.request.kind,
    };
    this.changed(run.id);
    return { result: 'committed', wakes };
  }

  async stageInputs(runId: string, step: number, firstIndex: number, inputs: readonly string[]): Promise<void> {
    const key = inputsKey(runId, step);
    const staged = this.inputs.get(key) ?? [];
    inputs.forEach((input, i) => (staged[firstIndex + i] = input));
    this.inputs.set(key, staged);
  }

  async createChildren(parentId: string, parentStep: number, indices: readonly number[]): Promise<StoredRun[]> {
    return this.makeChildren(parentId, parentStep, indices);
  }

  /** createChildren, in one go (also a commit's, for the child it starts and takes). */
  private makeChildren(parentId: string, parentStep: number, indices: readonly number[]): StoredRun[] {
    const parent = this.runs.get(parentId);
    const fanOut = parent?.fanOut;
    const inputs = this.inputs.get(inputsKey(parentId, parentStep));
    const made: StoredRun[] = [];
    if (!parent || !fanOut || fanOut.step !== parentStep || !inputs || !fanOut.childTarget) return made;
    if (parent.run.status !== 'waiting') return made; // cancelled or failed fast meanwhile
    for (const index of indices) {
      const id = childRunId(parentId, parentStep, index);
      const checkpoint = inputs[index];
      if (this.runs.has(id) || checkpoint === undefined) continue;
      this.runs.set(id, {
        run: {
          id,
          flow: parent.run.flow,
          fingerprint: parent.run.fingerprint,
          status: 'running',
          step: 0,
          attempt: 0,
          checkpoint,
          target: { ...fanOut.childTarget },
          createdAt: this.clock.now(),
          startedAt: this.clock.now(),
          updatedAt: this.clock.now(),
          parent: { id: parentId, step: parentStep, index },
          parkCount: 0,
          replay: { sent: 0 },
          ...(parent.run.priority === undefined ? {} : { priority: parent.run.priority }),
        },
        errors: [],
        conflicts: [],
        outcomes: new Map(),
        reserved: new Map(),
        history: [],
        stream: [],
      });
      made.push(copyOf(this.runs.get(id)!.run));
    }
    return made;
  }

  async childEnded(
    parentId: string,
    parentStep: number,
    index: number,
    report: ChildEndReport,
  ): Promise<ChildEndedResult> {
    return this.recordChildEnd(parentId, parentStep, index, report);
  }

  async cancel(runId: string, by?: string): Promise<{ result: CancelResult; wakes: string[] }> {
    const wakes: string[] = [];
    const entry = this.runs.get(runId);
    if (!entry) return { result: 'missing', wakes };
    const { run } = entry;
    if (isFinal(run.status)) return { result: 'ended', wakes };
    const status = run.status;
    const now = this.clock.now();
    logRunEvent(entry, { at: now, step: run.step, kind: 'cancelled', ...(by === undefined ? {} : { by }) });
    this.leaveWaiters(run, wakes);
    this.releaseReserved(entry, wakes);
    this.emit((listener) => listener.cancelled?.(runId, run.retries ?? 0));
    this.finish(entry, 'cancelled', now);
    // Waiting on children: its fan-out is of its current step (one of an earlier step has fanned in).
    const onChildren = status === 'waiting' && entry.fanOut?.step === run.step;
    return { result: onChildren ? 'cancelled-waiting' : 'cancelled', wakes };
  }

  async appendErrors(runId: string, records: ErrorRecord[]): Promise<void> {
    const entry = this.runs.get(runId);
    if (entry) this.pushErrors(entry, records);
  }

  async noteRefusal(runId: string, message: string): Promise<void> {
    const run = this.runs.get(runId)?.run;
    if (run) run.refusal = message;
  }

  async reserveMessage(at: StoredRun, ordinal: number, address: string): Promise<Message | undefined | 'stale'> {
    const entry = this.runs.get(at.id);
    if (!entry || isFinal(entry.run.status) || !atStep(entry.run, at)) return 'stale';
    const held = entry.reserved.get(ordinal);
    if (held) return decodeMessage(held.message);
    const message = this.queues.get(address)?.shift();
    if (message === undefined) return undefined;
    if (this.queues.get(address)?.length === 0) this.queues.delete(address);
    entry.reserved.set(ordinal, { address, message });
    return decodeMessage(message);
  }

  async reserveAnyMessage(
    at: StoredRun,
    ordinal: number,
    addresses: readonly string[],
  ): Promise<Received | undefined | 'stale'> {
    const entry = this.runs.get(at.id);
    if (!entry || isFinal(entry.run.status) || !atStep(entry.run, at)) return 'stale';
    const held = entry.reserved.get(ordinal);
    if (held) return { address: held.address, message: decodeMessage(held.message) };
    for (const address of addresses) {
      const message = await this.reserveMessage(at, ordinal, address);
      if (message && message !== 'stale') return { address, message };
    }
    return undefined;
  }

  async park(
    at: StoredRun,
    park: ParkRequest,
    replay: StepReplay,
    outbox: OutgoingMessage[],
    takenBy?: string,
  ): Promise<ParkReply> {
    const wakes: string[] = [];
    const entry = this.runs.get(at.id);
    if (!entry) return { result: 'missing', parkCount: 0, ready: false, wakes };
    const { run } = entry;
    if (isFinal(run.status) || !atStep(run, at)) return { result: 'stale', parkCount: 0, ready: false, wakes };
    this.endStreamTry(entry);
    const now = this.clock.now();
    logWoken(entry, run, entry.reserved, now, park);
    if (!sameParkAs(run.replay.parked, park)) logRunEvent(entry, parkedEvent(run.step, park, now));
    this.leaveWaiters(run, wakes);
    const parkCount = ++run.parkCount;
    run.status = 'waiting';
    run.replay = copyOfReplay(replay);
    run.updatedAt = now;
    run.startedAt ??= now;
    this.deliver(outbox, wakes);
    const wake = wakeId(run.id, run.step, parkCount);
    const cycle = park.ask && this.askCycle(park.ask);
    // An ask that closes a cycle is answered at once, with the chain: the ask rejects (ASK_CYCLE).
    if (cycle)
      this.deliver(
        [{ address: park.address, message: { id: `${wake}.cycle`, body: null, sentAt: now, cycle } }],
        wakes,
      );
    else if (park.ask) this.asking.set(park.ask.from, { to: park.ask.to, runId: run.id, wake, address: park.address });
    const addresses = park.addresses ?? [park.address];
    for (const address of addresses) {
      const waiting = this.waiters.get(address) ?? new Set<string>();
      waiting.add(wakeId(run.id, run.step, parkCount));
      this.waiters.set(address, waiting);
    }
    const ready = addresses.some((address) => (this.queues.get(address)?.length ?? 0) > 0);
    this.changed(run.id);
    return { result: 'committed', parkCount, ready, wakes, ...this.take(takenBy, wakes) };
  }

  async send(address: string, message: Message): Promise<{ wakes: string[] }> {
    const wakes: string[] = [];
    this.deliver([{ address, message }], wakes);
    return { wakes };
  }

  /** The message at the head of the mailbox at `address` (an agent's inbox: the turn's message). */
  peekMessage(address: string): Message | undefined {
    const head = this.queues.get(address)?.[0];
    return head === undefined ? undefined : decodeMessage(head);
  }

  /** Takes the head of the mailbox at `address` off when it is message `messageId`; whether it was. */
  shiftMessage(address: string, messageId: string): boolean {
    const queue = this.queues.get(address);
    if (!queue?.length || decodeMessage(queue[0]!).id !== messageId) return false;
    queue.shift();
    if (queue.length === 0) this.queues.delete(address);
    return true;
  }

  /** Drops the mailbox at `address` and its messages (an agent deleted). */
  dropMailbox(address: string): void {
    this.queues.delete(address);
  }

  async mailboxSize(address: string): Promise<number> {
    return this.queues.get(address)?.length ?? 0;
  }

  async reopen(runId: string): Promise<ReopenReply> {
    const entry = this.runs.get(runId);
    if (!entry) return { result: 'missing' };
    const { run } = entry;
    if (run.status === 'completed') return { result: 'completed' };
    if (run.status !== 'failed' && run.status !== 'cancelled') return { result: 'not-ended', status: run.status };
    const reopenedChildren: number[] = [];
    const now = this.clock.now();
    logRunEvent(entry, { at: now, step: run.step, kind: 'operator-retry', status: run.status });
    const fanOut = entry.fanOut;
    if (fanOut && fanOut.step === run.step) {
      for (let index = 0; index < fanOut.total; index++) {
        const outcome = entry.outcomes.get(index);
        if (outcome !== undefined && decodeOutcome(outcome).status === 'completed') continue;
        if (outcome !== undefined) {
          entry.outcomes.delete(index);
          fanOut.ended--;
        }
        reopenedChildren.push(index);
      }
      fanOut.failed = 0;
      run.status = 'waiting';
    } else {
      run.status = run.startedAt === undefined ? 'queued' : 'running';
    }
    delete run.error;
    delete run.finishedAt;
    delete run.stepStartedAt;
    delete run.retryAt;
    run.attempt = 0;
    run.retries = (run.retries ?? 0) + 1;
    this.endStreamTry(entry);
    run.updatedAt = now;
    this.retainAgain(runId);
    this.changed(runId);
    return { result: 'reopened', run: copyOf(run), reopenedChildren };
  }

  async history(runId: string): Promise<string[] | undefined> {
    return this.runs.get(runId)?.history.slice();
  }

  async events(runId: string): Promise<string[] | undefined> {
    const entry = this.runs.get(runId);
    return entry && (entry.events?.slice() ?? []);
  }

  async takeMessage(address: string, messageId: string): Promise<Message | 'no-reply-to' | undefined> {
    const queue = this.queues.get(address);
    const index = queue?.findIndex((encoded) => decodeMessage(encoded).id === messageId) ?? -1;
    if (!queue || index === -1) return undefined;
    if (decodeMessage(queue[index]!).replyTo === undefined) return 'no-reply-to';
    const [taken] = queue.splice(index, 1);
    if (queue.length === 0) this.queues.delete(address);
    return decodeMessage(taken!);
  }

  async mailboxes(messages: number): Promise<StoredMailbox[]> {
    const addresses = new Set([...this.queues.keys(), ...this.waiters.keys()]);
    return [...addresses].sort().map((address) => {
      const queue = this.queues.get(address) ?? [];
      return {
        address,
        size: queue.length,
        messages: queue.slice(0, messages).map(decodeMessage),
        waiters: [...(this.waiters.get(address) ?? [])],
      };
    });
  }

  async heartbeat(worker: WorkerBeat, join = false): Promise<'alive' | 'fenced'> {
    if (!join && !this.registry.has(worker.id)) return 'fenced';
    this.registry.set(worker.id, { ...worker, flows: [...worker.flows], lastSeenAt: this.clock.now() });
    return 'alive';
  }

  async workers(lapseMs: number): Promise<StoredWorker[]> {
    const since = this.clock.now() - lapseMs;
    return [...this.registry.values()].filter((worker) => worker.lastSeenAt >= since).map((worker) => ({ ...worker }));
  }

  async claimLapsed(lapseMs: number): Promise<StoredWorker[]> {
    const since = this.clock.now() - lapseMs;
    const now = this.clock.now();
    const lapsed = [...this.registry.values()].filter((worker) => worker.lastSeenAt < since);
    for (const worker of lapsed) this.registry.delete(worker.id);
    return lapsed.map((worker) => ({ ...worker, silentMs: now - worker.lastSeenAt }));
  }

  async removeWorker(id: string): Promise<void> {
    this.registry.delete(id);
  }

  async releaseTaken(worker: string, wakeIds: readonly string[]): Promise<void> {
    const taken = this.taken.get(worker);
    for (const id of wakeIds) taken?.delete(id);
    if (taken?.size === 0) this.taken.delete(worker);
  }

  async claimTaken(worker: string): Promise<string[]> {
    const taken = [...(this.taken.get(worker) ?? [])];
    this.taken.delete(worker);
    return taken;
  }

  /** Direct hand-off: `worker` takes the first of `wakes` (see CommitFields.takenBy). */
  private take(worker: string | undefined, wakes: string[]): { taken?: string } {
    const wake = worker === undefined ? undefined : wakes.shift();
    if (wake === undefined) return {};
    this.addTaken(worker!, wake);
    return { taken: wake };
  }

  private addTaken(worker: string, id: string): void {
    const taken = this.taken.get(worker) ?? new Set<string>();
    taken.add(id);
    this.taken.set(worker, taken);
  }

  async acquireBudget(request: BudgetRequest): Promise<BudgetReply> {
    return this.budgets.acquire(request);
  }

  async releaseBudget(holds: readonly BudgetHold[]): Promise<{ wakes: string[] }> {
    return this.budgets.release(holds);
  }

  async spendBudget(hold: BudgetHold, units: number): Promise<void> {
    this.budgets.spend(hold, units);
  }

  async holdBudget(keys: readonly string[], forMs: number): Promise<void> {
    this.budgets.hold(keys, forMs);
  }

  async renewBudget(holds: readonly BudgetHold[], leaseMs: number): Promise<void> {
    this.budgets.renew(holds, leaseMs);
  }

  async budgetWoken(key: string, waiter: string): Promise<boolean> {
    return this.budgets.woken(key, waiter);
  }

  async budgetOf(key: string, perMs: number): Promise<BudgetState> {
    return this.budgets.state(key, perMs);
  }

  async budgetKeys(): Promise<BudgetKeyInfo[]> {
    return this.budgets.keys();
  }

  async summaries(runIds: readonly string[]): Promise<(StoredRun | undefined)[]> {
    return runIds.map((id) => {
      const run = this.runs.get(id)?.run;
      return run && { ...copyOf(run), checkpoint: '' };
    });
  }

  async fanOutOf(parentId: string): Promise<StoredFanOut | undefined> {
    const entry = this.runs.get(parentId);
    const fanOut = entry?.fanOut;
    if (!entry || !fanOut) return undefined;
    const { total, started, ended, failed, step, childTarget } = fanOut;
    const { flow, fingerprint } = entry.run;
    return {
      request: decodeRequest(fanOut.request),
      total,
      started,
      ended,
      failed,
      step,
      flow,
      fingerprint,
      ...(childTarget ? { childTarget: { ...childTarget } } : {}),
    };
  }

  async snapshotOf(parentId: string): Promise<string | undefined> {
    return this.runs.get(parentId)?.fanOut?.snapshot || undefined;
  }

  async itemOf(parentId: string, step: number, index: number): Promise<Json | undefined> {
    const item = this.inputs.get(inputsKey(parentId, step))?.[index];
    return item === undefined ? undefined : decodeJson(item);
  }

  async outcomesOf(parentId: string, total: number): Promise<(ChildOutcome | undefined)[]> {
    const outcomes = new Array<ChildOutcome | undefined>(total);
    for (const [index, outcome] of this.runs.get(parentId)?.outcomes ?? []) outcomes[index] = decodeOutcome(outcome);
    return outcomes;
  }

  async record(runId: string): Promise<RunRecord | undefined> {
    const entry = this.runs.get(runId);
    if (!entry) return undefined;
    const fanOut = entry.fanOut;
    return {
      run: copyOf(entry.run),
      errors: entry.errors.map(decodeErrorRecord),
      conflicts: entry.conflicts.map(decodeConflict),
      ...(fanOut && fanOut.step === entry.run.step
        ? { children: { total: fanOut.total, ended: fanOut.ended, failed: fanOut.failed } }
        : {}),
    };
  }

  async list(options: ListRunsOptions & { limit: number }): Promise<StoredRun[]> {
    const found: StoredRun[] = [];
    let skip = options.offset ?? 0;
    for (const { run } of [...this.runs.values()].reverse()) {
      if (found.length >= options.limit) break;
      if (run.parent) continue; // fan-out children are seen through their parent
      if (options.status && run.status !== options.status) continue;
      if (options.flow && run.flow !== options.flow) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      found.push({ ...copyOf(run), checkpoint: '' });
    }
    return found;
  }

  async appendStream(runId: string, write: StreamWrite): Promise<StreamAppendReply> {
    const entry = this.runs.get(runId);
    if (!entry) return { result: 'missing' };
    if (isFinal(entry.run.status)) return { result: 'ended' };
    let attempt = write.attempt;
    const ids: string[] = [];
    const push = (stored: Omit<StreamEntry, 'id' | 'data'> & { data: string }): void => {
      const id = this.nextStreamId();
      entry.stream.push({ id, entry: stored });
      ids.push(id);
    };
    if (write.token !== undefined) {
      // As append-stream.lua: a known try keeps its attempt; a new one goes above the step's
      // highest, after a restart entry when the latest writer did not end.
      if (entry.streamTry?.step !== write.step) entry.streamTry = { step: write.step, tries: [], ended: false };
      const record = entry.streamTry;
      const known = record.tries.find((t) => t.token === write.token);
      if (known) attempt = known.attempt;
      else {
        const highest = Math.max(-1, ...record.tries.map((t) => t.attempt));
        if (highest >= attempt) attempt = highest + 1;
        const latest = record.tries.at(-1);
        const worker = write.worker ?? '';
        if (latest && !record.ended) {
          const first = write.entries[0];
          push({
            step: write.step,
            attempt,
            node: write.node ?? first?.node ?? '',
            at: write.at ?? first?.at ?? 0,
            data: 'null',
            restart: { attempt: latest.attempt, stoppedWorker: latest.worker, worker },
          });
        }
        record.tries.push({ token: write.token, attempt, worker });
        if (record.tries.length > MAX_STREAM_TRIES) record.tries.shift();
        record.ended = false;
        entry.run.streamWriter = { step: write.step, attempt, worker, ended: false };
      }
    }
    for (const { node, at, data } of write.entries)
      push({ step: write.step, attempt, node, at, data, ...(write.item === undefined ? {} : { item: write.item }) });
    if (entry.stream.length > this.maxStreamEntries)
      entry.stream.splice(0, entry.stream.length - this.maxStreamEntries);
    this.streamGrew(runId);
    return { result: 'appended', attempt, ids };
  }

  async readStream(
    runId: string,
    after: string,
    options: { count: number; blockMs?: number },
  ): Promise<StoredStreamEntry[]> {
    const found = this.streamAfter(runId, after, options.count);
    if (found.length > 0 || !options.blockMs) return found;
    await new Promise<void>((resolve) => {
      const waiters = this.streamWaiters.get(runId) ?? new Set();
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.streamWaiters.get(runId) === waiters) this.streamWaiters.delete(runId);
        resolve();
      };
      const timer = setTimeout(done, options.blockMs);
      timer.unref?.();
      waiters.add(done);
      this.streamWaiters.set(runId, waiters);
    });
    return this.streamAfter(runId, after, options.count);
  }

  private streamAfter(runId: string, after: string, count: number): StoredStreamEntry[] {
    const stream = this.runs.get(runId)?.stream ?? [];
    const found: StoredStreamEntry[] = [];
    for (const stored of stream) {
      if (found.length >= count) break;
      if (compareStreamIds(stored.id, after) <= 0) continue;
      if (stored.end) found.push({ id: stored.id, end: stored.end });
      else found.push({ ...stored.entry!, id: stored.id, data: decodeJson(stored.entry!.data) });
    }
    return found;
  }

  /** A new stream id, `<ms>-<seq>` on the store's clock, above every id handed out before. */
  private nextStreamId(): string {
    const ms = this.clock.now();
    this.lastStreamId =
      ms > this.lastStreamId.ms ? { ms, seq: 0 } : { ms: this.lastStreamId.ms, seq: this.lastStreamId.seq + 1 };
    return `${this.lastStreamId.ms}-${this.lastStreamId.seq}`;
  }

  /** Marks the latest writer of the run's stream ended: a transition ended its try. */
  private endStreamTry(entry: MemoryRun): void {
    if (!entry.streamTry || entry.streamTry.ended) return;
    entry.streamTry.ended = true;
    if (entry.run.streamWriter) entry.run.streamWriter = { ...entry.run.streamWriter, ended: true };
  }

  /** Wakes the blocked reads of the run's stream. */
  private streamGrew(runId: string): void {
    const waiters = this.streamWaiters.get(runId);
    if (waiters) for (const wake of [...waiters]) wake();
  }

  /** Runs parked on a mailbox now (for the `queueflow.runs.parked` gauge). */
  parkedRuns(): number {
    let count = 0;
    for (const waiting of this.waiters.values()) count += waiting.size;
    return count;
  }

  /** Ids of every run held (fan-out children included), for tests and tools. */
  runIds(): string[] {
    return [...this.runs.keys()];
  }

  /**
   * Records how child `index` of a waiting parent ended (once per index) and says what the parent
   * does next (recordChildEnd in run-lifecycle.lua).
   */
  private recordChildEnd(
    parentId: string,
    parentStep: number,
    index: number,
    report: ChildEndReport,
  ): ChildEndedResult {
    const entry = this.runs.get(parentId);
    const fanOut = entry?.fanOut;
    if (!entry || !fanOut || entry.run.status !== 'waiting' || fanOut.step !== parentStep) return { type: 'ignored' };
    if (entry.outcomes.has(index)) return fanOut.ended >= fanOut.total ? { type: 'fan-in' } : { type: 'duplicate' };
    const outcome: ChildOutcome = report.outcome ?? { status: 'cancelled' };
    entry.outcomes.set(index, encodeOutcome(outcome));
    if (report.values?.length) this.claim(parentId, { refs: report.values, texts: {} });
    if (outcome.status === 'completed' && fanOut.kind === 'items') {
      // A completed item's input is read no more (see recordChildEnd in run-lifecycle.lua).
      const inputs = this.inputs.get(inputsKey(parentId, parentStep));
      if (inputs) inputs[index] = undefined;
    }
    if (outcome.status === 'failed') this.pushErrors(entry, [outcome.error]);
    fanOut.ended++;
    entry.run.updatedAt = report.now;
    // Every end of up to 199 children, every ⌊total / 100⌋-th of more (recordChildEnd in run-lifecycle.lua).
    if (fanOut.ended % Math.max(1, Math.floor(fanOut.total / 100)) === 0) this.changed(parentId);
    if (outcome.status !== 'completed') {
      fanOut.failed++;
      if (report.failFast) {
        entry.run.error = { ...report.parentError };
        this.finish(entry, 'failed', report.now);
        return { type: 'parent-ended' };
      }
    }
    if (fanOut.ended >= fanOut.total) return { type: 'fan-in' };
    const start = nextChildren(fanOut, report.take === true);
    fanOut.started += start?.count ?? 0;
    return { type: 'recorded', start };
  }

  /** Ends a run; a fan-out child's end is not announced (its parent hears of it). */
  private finish(entry: MemoryRun, status: 'completed' | 'failed' | 'cancelled', now: number): void {
    const { run } = entry;
    run.status = status;
    run.finishedAt = now;
    run.updatedAt = now;
    // The stream's end marker, in the same transition: a follower ends when it reads it. Only
    // where someone may read it, as on Redis (run-lifecycle.lua): a stream with entries, or followed.
    if (entry.stream.length > 0 || entry.followed) {
      entry.stream.push({ id: this.nextStreamId(), end: status });
      this.streamGrew(run.id);
    }
    if (!run.parent) this.emit((listener) => listener.ended?.(run.id));
    this.changed(run.id);
    this.finished.push(run.id);
    while (this.finished.length > this.retainFinishedRuns) this.drop(this.finished.shift()!);
  }

  /** Forgets a finished run the retention no longer keeps (its idempotency key goes with it). */
  private drop(runId: string): void {
    const entry = this.runs.get(runId);
    if (!entry || !isFinal(entry.run.status)) return; // reopened since it finished
    if (entry.idempotencyKey !== undefined && this.idempotency.get(entry.idempotencyKey) === runId) {
      this.idempotency.delete(entry.idempotencyKey);
    }
    if (entry.fanOut) this.inputs.delete(inputsKey(runId, entry.fanOut.step));
    this.release(runId, entry);
    this.runs.delete(runId);
    this.streamGrew(runId); // its followers find it gone
  }

  async values(hashes: readonly string[]): Promise<(string | undefined)[]> {
    return hashes.map((hash) => this.stored.get(hash)?.text);
  }

  /** Claims the values of `claim` for run `runId`, storing those not stored yet. */
  private claim(runId: string, claim: ValueClaim | undefined): void {
    const entry = this.runs.get(runId);
    if (!claim || !entry) return;
    entry.values ??= new Set();
    for (const hash of claim.refs) {
      let value = this.stored.get(hash);
      if (!value) {
        const text = claim.texts[hash];
        if (text === undefined) continue; // a claim of a value no run holds: nothing to keep
        value = { text, runs: new Set() };
        this.stored.set(hash, value);
      }
      value.runs.add(runId);
      entry.values.add(hash);
    }
  }

  /** The run's record goes: its claims go, and each value no other run claims goes with it. */
  private release(runId: string, entry: MemoryRun): void {
    this.dropValues(runId, entry.values ?? []);
    delete entry.values;
  }

  /**
   * Claims the values `claim` references for `owner`, a holder other than a run (a keyed agent,
   * by its address), storing those not stored yet. The owner keeps the list of what it claimed.
   */
  keepValues(owner: string, claim: ValueClaim | undefined): string[] {
    const kept: string[] = [];
    for (const hash of claim?.refs ?? []) {
      let value = this.stored.get(hash);
      if (!value) {
        const text = claim!.texts[hash];
        if (text === undefined) continue; // held by nothing any more: nothing to keep
        value = { text, runs: new Set() };
        this.stored.set(hash, value);
      }
      value.runs.add(owner);
      kept.push(hash);
    }
    return kept;
  }

  /** `owner` (a run or {@link MemoryRunStore.keepValues}' owner) lets `hashes` go: a value no one claims goes. */
  dropValues(owner: string, hashes: Iterable<string>): void {
    for (const hash of hashes) {
      const value = this.stored.get(hash);
      value?.runs.delete(owner);
      if (value?.runs.size === 0) this.stored.delete(hash);
    }
  }

  /** A reopened run is no longer among the finished ones the retention drops. */
  private retainAgain(runId: string): void {
    const index = this.finished.indexOf(runId);
    if (index !== -1) this.finished.splice(index, 1);
  }

  private pushRecord(entry: MemoryRun, record: string): void {
    entry.history.push(record);
    if (entry.history.length > this.maxStepRecords) entry.history.splice(0, entry.history.length - this.maxStepRecords);
  }

  /** Announces a change of a run a live view may show (not of fan-out children: too many). */
  private changed(runId: string): void {
    const run = this.runs.get(runId)?.run;
    if (!run || run.parent || this.listeners.size === 0) return;
    const change = { runId, status: run.status, steps: run.step };
    this.emit((listener) => listener.changed?.(change));
  }

  private pushErrors(entry: MemoryRun, records: readonly ErrorRecord[]): void {
    for (const record of records) entry.errors.push(encodeErrorRecord(record));
    if (entry.errors.length > MAX_ERRORS_KEPT) entry.errors.splice(0, entry.errors.length - MAX_ERRORS_KEPT);
  }

  /** Appends each message to its mailbox and takes the runs parked there off its waiters. */
  private deliver(outbox: readonly OutgoingMessage[], wakes: string[]): void {
    for (const { address, message } of outbox) {
      const queue = this.queues.get(address) ?? [];
      queue.push(encodeMessage(message));
      this.queues.set(address, queue);
      this.collectWaiters(address, wakes);
      for (const arrived of this.arrivals.get(address) ?? []) arrived();
    }
  }

  /** Calls `listener` each time a message reaches `address`, until the returned function is called. */
  onArrival(address: string, listener: () => void): () => void {
    const listeners = this.arrivals.get(address) ?? new Set();
    listeners.add(listener);
    this.arrivals.set(address, listeners);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.arrivals.delete(address);
    };
  }

  /** Gives the messages the current step reserved back, at the head of their mailboxes, in order. */
  private releaseReserved(entry: MemoryRun, wakes: string[]): void {
    const ordinals = [...entry.reserved.keys()].sort((a, b) => b - a);
    for (const ordinal of ordinals) {
      const { address, message } = entry.reserved.get(ordinal)!;
      const queue = this.queues.get(address) ?? [];
      queue.unshift(message);
      this.queues.set(address, queue);
      this.collectWaiters(address, wakes);
    }
    entry.reserved.clear();
  }

  /** A message came to `address`: one run parked there leaves its waiters, to be woken. */
  private collectWaiters(address: string, wakes: string[]): void {
    const waiting = this.waiters.get(address);
    const first = waiting?.values().next().value;
    if (first === undefined) return;
    waiting!.delete(first);
    if (waiting!.size === 0) this.waiters.delete(address);
    wakes.push(first);
  }

  /**
   * The run stops waiting where its step last parked: its wake leaves that address's waiters. A
   * `receiveAny` park leaves several: a send to one of them woke the run and took its wake there
   * only, so a send to another may have taken its wake meant for another run since. Where a
   * message waits with runs still parked, one of them is woken (`wakes`): no message stays
   * stranded beside a waiting run.
   */
  private leaveWaiters(run: StoredRun, wakes: string[]): void {
    const parked = run.replay.parked;
    if (parked === undefined) return;
    if (parked.ask && this.asking.get(parked.ask.from)?.wake === wakeId(run.id, run.step, run.parkCount))
      this.asking.delete(parked.ask.from);
    for (const address of parked.addresses ?? [parked.address]) {
      const waiting = this.waiters.get(address);
      waiting?.delete(wakeId(run.id, run.step, run.parkCount));
      if (waiting?.size === 0) this.waiters.delete(address);
      if (parked.addresses && (this.queues.get(address)?.length ?? 0) > 0) this.collectWaiters(address, wakes);
    }
  }

  /**
   * The wait cycle `ask` would close: the chain of asks still waiting from the agent asked, each
   * waiting for the next one's answer, that comes back to the asker (the agent asked first and
   * last); undefined when there is none. An edge counts while its run is parked on that ask and
   * no answer waits for it there.
   */
  private askCycle(ask: { from: string; to: string }): string[] | undefined {
    const chain = [ask.to];
    for (let at = ask.to; at !== ask.from;) {
      const edge = this.asking.get(at);
      const run = edge && this.runs.get(edge.runId)?.run;
      if (!edge || run?.status !== 'waiting' || wakeId(run.id, run.step, run.parkCount) !== edge.wake) return undefined;
      if ((this.queues.get(edge.address)?.length ?? 0) > 0 || chain.includes(edge.to)) return undefined;
      chain.push((at = edge.to));
    }
    return [...chain, ask.to];
  }

  private emit(call: (listener: RunEventListener) => void): void {
    // After the transition, as a published message arrives after the script that published it.
    queueMicrotask(() => {
      for (const listener of this.listeners) call(listener);
    });
  }
}

function inputsKey(runId: string, step: number): string {
  return `${runId}:${step}`;
}

/**
 * The children an end starts (see FanOutCommit.refill and ChildEndReport.take; recordChildEnd in
 * run-lifecycle.lua).
 */
function nextChildren(fanOut: MemoryFanOut, take: boolean): ChildRange | undefined {
  const left = fanOut.total - fanOut.started;
  const room = Math.min(left, fanOut.window - (fanOut.started - fanOut.ended));
  const enough = take ? 1 : Math.min(fanOut.refill, left);
  return left > 0 && room >= enough ? { first: fanOut.started, count: room } : undefined;
}

/** Whether the run still stands where a step started: same step counter and same park count. */
function atStep(run: StoredRun, at: StoredRun): boolean {
  return run.step === at.step && run.parkCount === at.parkCount;
}

/**
 * A copy the caller may keep: later transitions do not change it, and changing it changes nothing
 * stored (as a record read back from Redis). Transitions copy what they are given alike.
 */
function copyOf(run: StoredRun): StoredRun {
  return {
    ...run,
    target: { ...run.target },
    replay: copyOfReplay(run.replay),
    ...(run.error ? { error: { ...run.error } } : {}),
    ...(run.parent ? { parent: { ...run.parent } } : {}),
    ...(run.streamWriter ? { streamWriter: { ...run.streamWriter } } : {}),
  };
}

function copyOfReplay(replay: StepReplay): StepReplay {
  return {
    ...replay,
    ...(replay.parked
      ? {
          parked: { ...replay.parked, ...(replay.parked.addresses ? { addresses: [...replay.parked.addresses] } : {}) },
        }
      : {}),
    ...(replay.timedOut ? { timedOut: [...replay.timedOut] } : {}),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
