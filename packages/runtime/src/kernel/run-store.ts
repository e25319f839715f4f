import { recordOfRunError, type ErrorRecord } from '../errors/error-record.js';
import type { ChildOutcome, FanOutRequest, StepTarget } from '../interpreter/step-types.js';
import type { MergeConflict } from '../json/merge-patches.js';
import type { OutgoingMessage, ParkRequest, StepReplay } from '../interpreter/step-types.js';
import type { Json } from '../json/json.js';
import type { FinalRunStatus, ListRunsOptions, RunError, RunStatus } from './engine.js';
import type { StreamEntry } from '../stream/stream-types.js';
import type { Message, Received } from '../mailbox/message.js';
import type { ValueClaim } from './claim-check.js';
import type { AgentActivation, AgentTurn, TurnEnd, TurnStart, TurnStarted } from '../agent/agent-store.js';
import type { BudgetHold, BudgetKeyInfo, BudgetReply, BudgetRequest, BudgetState } from './budget-store.js';

/**
 * The storage contract of the run kernel (DESIGN "The run kernel"): where run state lives.
 *
 * Each operation is one atomic transition with fixed result codes; on Redis each is one Lua
 * script, in memory one synchronous change of maps. The rules of the run lifecycle (what a step
 * outcome means, when a fan-out resumes, how a cancel cascades) live in the step driver and the
 * run client, never here: a store only answers "did this transition apply, and what did it find".
 * One conformance suite (tests/store-conformance) checks every store against the same specs.
 */
export interface RunStore {
  /**
   * Writes a new run record (status `queued`) and indexes it for `list`. With an idempotency key
   * held by a retained run, writes nothing and names that run instead.
   */
  create(run: NewRun): Promise<{ created: true } | { created: false; runId: string }>;
  /**
   * The id under which {@link RunStore.create} should write `run`: `run.id`, or another new id
   * when the store places runs by id (a store split into partitions puts a run with an
   * idempotency key in that key's partition). Optional: without it, `run.id`.
   */
  placeRun?(run: NewRun): string;
  /** Removes a run that could not be started (its first step could not be enqueued). */
  discard(runId: string): Promise<void>;
  /** The run's record, or `undefined` when there is none (never created, or expired). */
  load(runId: string): Promise<StoredRun | undefined>;
  /** The run's status and step counter alone (cheap: no checkpoint is read). */
  position(runId: string): Promise<{ status: RunStatus; step: number } | undefined>;
  /**
   * The run's record for the step a worker is about to take; a `queued` run whose flow and graph
   * fingerprint are among `runnable` becomes `running` (its first step starts now) in the same
   * transition.
   *
   * With `wake` (the park count of the wake being run), for a run parked at that park count, the
   * messages reserved for its current step's receives come back too (`reserved`), the parked
   * receive's own reserved now when its mailbox has one (as {@link RunStore.reserveMessage} would
   * when the step runs again): a woken step's receives then cost no transition of their own.
   *
   * `worker`: who loads it, for the `taken-over` event of {@link RunStore.noteTakeover}, and of
   * `stalled`: the task came back from a worker that lost it (see {@link StalledTask}). A run not
   * ended logs `taken-over` from {@link StalledTask.from}, else, when the run stands past the task's
   * step, from the worker of its newest step record (which ran those steps in that task), by
   * `worker`; once per {@link StalledTask.key}, and never from `worker` itself. Only such a load
   * reads more than the record.
   */
  loadForStep(
    runId: string,
    runnable: readonly Runnable[],
    wake?: number,
    worker?: string,
    stalled?: StalledTask,
  ): Promise<LoadedRun | undefined>;
  /**
   * Notes that worker `from` held the run's current step when it stopped heartbeating and
   * another worker took it over ({@link RunStore.claimLapsed}): the next
   * {@link RunStore.loadForStep} of the run by another `worker` logs a `taken-over` event naming
   * both, in its transition (one entry, should that load also be of a {@link StalledTask}).
   * Nothing for a run that has ended or does not exist. Optional: a store that lives and dies with
   * its process has no takeovers.
   */
  noteTakeover?(runId: string, from: string): Promise<void>;
  /**
   * The run's event log (kernel/run-event.ts): encoded entries, oldest first (the newest
   * `MAX_RUN_EVENTS`); `undefined` when there is no such run. Each entry is written by the
   * transition it records.
   */
  events(runId: string): Promise<string[] | undefined>;

  /**
   * Commits the outcome of the step the run stood at (`at`), only if it still stands there.
   * For a fan-out child, `report` records its end on the parent when the run ends here: in the
   * same transition where child and parent live together; else right after it, as
   * {@link RunStore.childEnded} would (a store of several partitions). A caller that dies in
   * between leaves the child's task to be delivered again, which finds the child ended and reports
   * it (once per child index). See {@link CommitMode} for what each mode writes.
   */
  commit(at: StoredRun, mode: CommitMode, fields: CommitFields, report?: ChildReport): Promise<CommitReply>;
  /**
   * Stages the inputs of the children of a fan-out the run is about to commit as step `step`
   * (child runs: each one's first encoded checkpoint; items: each encoded item), from index
   * `firstIndex` on, before that commit and a chunk at a time, so that no transition grows with the
   * fan-out's size. Idempotent: a redelivered step stages the same inputs. Inputs of a fan-out
   * whose commit never lands expire with the retention.
   */
  stageInputs(runId: string, step: number, firstIndex: number, inputs: readonly string[]): Promise<void>;
  /** Commits a step that fanned out: the parent waits; its staged inputs are kept. */
  fanOut(at: StoredRun, fields: FanOutCommit): Promise<{ result: CommitResult; wakes: string[] }>;
  /**
   * Creates the records of the child runs at `indices` of the fan-out `parentId` made at
   * `parentStep`, from their staged inputs, as they start (a window of them at a time): `running`
   * (the parent has started them; its window is what runs at once), with `startedAt`. A record
   * that exists is left as it is, and a parent that no longer waits on the fan-out gets none (or,
   * where children live apart from their parent, gets them cancelled). Returns the records made,
   * as {@link RunStore.load} would.
   */
  createChildren(parentId: string, parentStep: number, indices: readonly number[]): Promise<StoredRun[]>;
  /**
   * Records how child `index` of the parent's fan-out at `parentStep` ended (once per index). A
   * completed item's staged input goes with it (nothing reads it again: a retry runs only the
   * items that did not complete).
   */
  childEnded(parentId: string, parentStep: number, index: number, report: ChildEndReport): Promise<ChildEndedResult>;
  /**
   * Cancels the run now (see {@link CancelResult}); messages its step reserved go back. Logs a
   * `cancelled` event, `by` whom when given.
   */
  cancel(runId: string, by?: string): Promise<{ result: CancelResult; wakes: string[] }>;
  /**
   * Claims the runs whose fan-out's children are being cancelled (a cancel that found the run
   * waiting on them, {@link CancelResult} `cancelled-waiting`, or a child's end that failed it
   * fast) and whose cascade has not gone on for `olderThanMs`: its canceller died. A claimed one is
   * not due again for `olderThanMs` (another worker leaves it alone); a few are claimed at a time.
   * Optional: a store that lives and dies with its process has none to recover.
   */
  cascadesDue?(olderThanMs: number): Promise<string[]>;
  /**
   * Notes that the cascade of cancels from `parentId` goes on (now), or is `done`. See
   * cascadesDue. Resolves whether the cascade was still recorded: not, when the run was reopened
   * since (RunStore.reopen drops it) or another cascade of it finished, and its children must be
   * left alone.
   */
  cascadeProgress?(parentId: string, done: boolean): Promise<boolean>;
  /**
   * Lets a `failed` or `cancelled` run go on from its last committed checkpoint: it becomes
   * `waiting` again when it waited on a fan-out (whose outcomes of children that did not complete
   * are dropped, their indices returned), `queued` when it never started, else `running`; its
   * error and `stepStartedAt` are cleared, its error history kept, its retention lifted.
   */
  reopen(runId: string): Promise<ReopenReply>;
  /** The encoded step records of the run, oldest first; `undefined` when there is no such run. */
  history(runId: string): Promise<string[] | undefined>;
  /** Appends error records to the run's history (failed tries of a fan-out item). */
  appendErrors(runId: string, records: ErrorRecord[]): Promise<void>;
  /** Notes why a worker gave the current step back; cleared by the next commit. */
  noteRefusal(runId: string, message: string): Promise<void>;

  /**
   * Reserves a message for receive call `ordinal` of the step the run stands at: the one reserved
   * for it before, else the head of the mailbox at `address`. `'stale'` when the run has ended or
   * moved on (a stale delivery reserves nothing).
   */
  reserveMessage(at: StoredRun, ordinal: number, address: string): Promise<Message | undefined | 'stale'>;
  /**
   * As {@link RunStore.reserveMessage}, for a `receiveAny`: the message reserved for `ordinal`
   * before, with the address it came from, else the head of the first of `addresses` that holds
   * one. One message at most is reserved for an ordinal, whatever the addresses asked.
   */
  reserveAnyMessage(
    at: StoredRun,
    ordinal: number,
    addresses: readonly string[],
  ): Promise<Received | undefined | 'stale'>;
  /**
   * Parks the run on `park.address` and delivers the step's sends so far. With `takenBy`, that
   * worker takes the first run the sends wake (see {@link CommitFields.takenBy}); with `starts`,
   * the turns of idle agents the sends reached may start in the same transition (see
   * {@link CommitFields.starts}).
   */
  park(
    at: StoredRun,
    park: ParkRequest,
    replay: StepReplay,
    outbox: OutgoingMessage[],
    takenBy?: string,
    starts?: TurnStart[],
  ): Promise<ParkReply>;
  /** Appends a message from outside any run; returns the wake ids of runs parked on the address. */
  send(address: string, message: Message): Promise<{ wakes: string[] }>;
  /** Messages waiting at `address`. */
  mailboxSize(address: string): Promise<number>;
  /**
   * Takes message `messageId` off the mailbox at `address`, wherever it is in the queue, if it
   * has a `replyTo` (a question an `ask` left); `'no-reply-to'` leaves it where it is.
   */
  takeMessage(address: string, messageId: string): Promise<Message | 'no-reply-to' | undefined>;
  /** Addresses with messages waiting or runs parked, with up to `messages` messages each (oldest first). */
  mailboxes(messages: number): Promise<StoredMailbox[]>;

  /**
   * Records that a worker is alive (its `lastSeenAt` becomes the store's clock now). A worker
   * joins once (`join`), then beats: a beat of a worker no longer in the registry (another claimed
   * it, {@link claimLapsed}, while it lived) records nothing and answers `'fenced'`.
   */
  heartbeat(worker: WorkerBeat, join?: boolean): Promise<'alive' | 'fenced'>;
  /** Workers seen within the last `lapseMs`. */
  workers(lapseMs: number): Promise<StoredWorker[]>;
  /**
   * Takes the workers not seen for `lapseMs` out of the registry and returns them: exactly one
   * caller gets each (the one that hands its steps back).
   */
  claimLapsed(lapseMs: number): Promise<StoredWorker[]>;
  /** Takes a worker out of the registry (it stopped cleanly). */
  removeWorker(id: string): Promise<void>;
  /**
   * Drops task ids from those `worker` took (wakes and children's first steps, see
   * {@link CommitFields.takenBy}): it ran them, or gave them back.
   */
  releaseTaken(worker: string, taskIds: readonly string[]): Promise<void>;
  /**
   * Takes every task id `worker` took and had not released (a dead worker's, to make them due
   * now): wake ids and child runs' first step task ids.
   */
  claimTaken(worker: string): Promise<string[]>;

  /** The fan-out a waiting parent made, with its counters (not its snapshot: see snapshotOf). */
  fanOutOf(parentId: string): Promise<StoredFanOut | undefined>;
  /** The encoded `shared` a parent had when it fanned out. */
  snapshotOf(parentId: string): Promise<string | undefined>;
  /** The staged input of item `index` of the ParallelBatchNode fan-out `parentId` made at `step`. */
  itemOf(parentId: string, step: number, index: number): Promise<Json | undefined>;
  /** Outcomes recorded so far, by child index. */
  outcomesOf(parentId: string, total: number): Promise<(ChildOutcome | undefined)[]>;
  /** The run's record with its history lists and fan-out counters, for `get`. */
  record(runId: string): Promise<RunRecord | undefined>;
  /**
   * The JSON texts of values stored apart (the claim check, claim-check.ts), by sha256 hex, in
   * order; `undefined` for one no retained run references any more.
   *
   * A value is written by the first transition whose {@link ValueClaim} brings its text, and kept
   * while a run the store keeps has claimed it: a transition claims the values its stored forms
   * reference for its run in the same atomic step, and the claims of a run go when its record
   * goes (memory: when the retention drops it; Redis: the value expires with the last run that
   * claimed it, see run-lifecycle.lua). A crash between two transitions leaves every claim whole.
   */
  values(hashes: readonly string[]): Promise<(string | undefined)[]>;
  /**
   * Appends the entries one try of a step wrote (`this.emit`) to the run's stream, in order, and
   * trims the stream to the store's per-run cap (oldest first). `write.token` names the try: a
   * try that wrote before keeps the attempt it got then; a new one, when another try of the same
   * step wrote entries before with an attempt at or above `write.attempt` (a try cut short by a
   * crash), gets the attempt above the highest (the reply says which). When the step's last
   * writer had not ended (no transition of the step since: it was cut short), a new try's entries
   * follow a restart entry ({@link StreamEntry.restart}) naming that try's attempt and worker and
   * `write.worker`; a write without entries then writes it alone (a try that starts). Every
   * transition that ends a try of a step (commit, park, fan-out, reopen) marks the last writer
   * ended. Writes nothing for a run that has ended or does not exist.
   */
  appendStream(runId: string, write: StreamWrite): Promise<StreamAppendReply>;
  /**
   * A follower of the run's stream starts: from now until the run's end, that end appends an end
   * marker to the stream even when its steps wrote no entry (see {@link RunStore.readStream}).
   * Returns the run's position as {@link RunStore.position} does; `undefined` for no such run
   * (nothing is written then).
   */
  followStream(runId: string): Promise<{ status: RunStatus; step: number } | undefined>;
  /**
   * Up to `count` entries of the run's stream after id `after`, oldest first, end markers
   * included; `[]` when there are none (or no such run). With `blockMs`, waits up to that long
   * (ms) for an entry when there is none yet. The transition that ends a run appends an end
   * marker when its stream holds an entry or someone follows it ({@link RunStore.followStream}):
   * a run that emitted nothing and that no one followed keeps no stream.
   */
  readStream(runId: string, after: string, options: { count: number; blockMs?: number }): Promise<StoredStreamEntry[]>;
  /** Runs created by clients (not fan-out children), newest first, at most `limit` after `offset`. */
  list(options: Required<Pick<ListRunsOptions, 'limit'>> & ListRunsOptions): Promise<StoredRun[]>;
  /** The records of the given runs without their checkpoints (`checkpoint` is `''`), in order. */
  summaries(runIds: readonly string[]): Promise<(StoredRun | undefined)[]>;

  /**
   * Admits one try of a visit against every limit in `request`, or refuses it by the first key
   * without budget (flow control): a waiter queued behind others on a key, a key held back, every
   * lease taken, or a full window. Admitted: a lease per `concurrency` limit, `units` in each
   * `rate` window, the waiter off every queue, a `throttled` run `running` again. Refused: the
   * waiter queued (FIFO, by priority) on the refusing key, and the delay after which its budget
   * allows it (a full window: when enough units leave it; a hold: its end; leases: the first
   * expiry), capped by `recheckMs`.
   */
  acquireBudget(request: BudgetRequest): Promise<BudgetReply>;
  /** Gives leases back; returns the waiters to wake (the first waiter of each key). */
  releaseBudget(holds: readonly BudgetHold[]): Promise<{ wakes: string[] }>;
  /** Sets the units the holder's admission takes from the key's window (the real cost, `this.spend`). */
  spendBudget(hold: BudgetHold, units: number): Promise<void>;
  /** Holds the keys back for everyone for `forMs` ms from now (a `RateLimitedError`). */
  holdBudget(keys: readonly string[], forMs: number): Promise<void>;
  /** Extends the leases still held to `leaseMs` ms from now (a worker's heartbeat). */
  renewBudget(holds: readonly BudgetHold[], leaseMs: number): Promise<void>;
  /**
   * Whether `waiter` was named among the wakes of `key` since `key` last refused it, clearing
   * that mark: a wake that came while the waiter's task was still running missed it.
   */
  budgetWoken(key: string, waiter: string): Promise<boolean>;
  /** A key's budget now, for a window of `perMs` ms. */
  budgetOf(key: string, perMs: number): Promise<BudgetState>;
  /**
   * The budget keys used within the budgets' idle expiry (a day), with the limits the last visit
   * asked of each and when it did (`Engine.budgets`).
   */
  budgetKeys(): Promise<BudgetKeyInfo[]>;
}

/**
 * What a fan-out child ending here without an outcome in its report is recorded as (every store):
 * completed (no patch), or failed with its last error record (else its run error).
 */
export function childOutcomeOf(mode: CommitMode, fields: CommitFields): ChildOutcome | undefined {
  if (mode === 'completed') return { status: 'completed' };
  if (mode !== 'failed') return undefined;
  const records = fields.errorRecords ?? [];
  return { status: 'failed', error: records[records.length - 1] ?? recordOfRunError(fields.runError) };
}

/** Error records kept per run, oldest dropped first (the cap of every store). */
export const MAX_ERRORS_KEPT = 50;

/** What {@link RunStore.reopen} found. */
export type ReopenReply =
  | { result: 'missing' | 'completed' }
  | { result: 'not-ended'; status: RunStatus }
  | { result: 'reopened'; run: StoredRun; reopenedChildren: number[] };

/** A mailbox as the store holds it. */
export interface StoredMailbox {
  address: string;
  size: number;
  messages: Message[];
  /** Wake ids of the runs parked on it. */
  waiters: string[];
}

/** What a worker tells the store of itself. Times are epoch ms. */
export interface WorkerBeat {
  id: string;
  host: string;
  pid: number;
  concurrency: number;
  active: number;
  flows: string[];
  /** The queues it serves; absent (a worker from before queues): `['default']`. */
  queues?: string[];
  startedAt: number;
  /** Scheduler-specific facts (BullMQ: its worker id, which prefixes its jobs' lock tokens). */
  meta?: Record<string, string>;
}

/** A worker as the registry holds it. */
export interface StoredWorker extends WorkerBeat {
  /** When its last heartbeat came, on the store's clock (epoch ms). */
  lastSeenAt: number;
  /** From {@link RunStore.claimLapsed}: how long it had been silent when claimed, on the store's clock (ms). */
  silentMs?: number;
}

/** A flow this worker runs and the fingerprint of its graph. */
export type Runnable = readonly [flow: string, fingerprint: string];

/** A new run's record. `checkpoint` is encoded (see codec.ts). */
export interface NewRun {
  id: string;
  flow: string;
  fingerprint: string;
  checkpoint: string;
  target: StepTarget;
  /** Epoch ms. */
  now: number;
  /** Makes the creation happen once while the run holding the key is retained. */
  idempotencyKey?: string;
  /** A fork's source: the run and the committed step it starts after. */
  forkedFrom?: { runId: string; step: number };
  /** The trace context of the run's start (W3C traceparent), which its steps' spans join. */
  trace?: string;
  /** The values its checkpoint references (see {@link RunStore.values}). */
  values?: ValueClaim;
  /** The run's priority (BullMQ's: 1 first), inherited by its steps and fan-out children. */
  priority?: number;
  /** A turn of a keyed agent: the agent, the turn's number and its message (agent-runtime.ts). */
  turn?: AgentTurn;
  /**
   * The worker that runs the first step itself, in the slot of the step whose commit made the run
   * (an agent's next turn, see TurnTaker): the run is created `running`, and its first step's task
   * is recorded among that worker's taken tasks in the same transition, so that a survivor starts it
   * should the worker die first ({@link RunStore.claimTaken}).
   */
  takenBy?: string;
}

/** A run's record as a store holds it. Times are epoch ms. */
export interface StoredRun {
  id: string;
  flow: string;
  fingerprint: string;
  status: RunStatus;
  /** The step counter: steps committed so far. */
  step: number;
  /** Failed tries of the current step (a count). */
  attempt: number;
  /** Encoded checkpoint (codec.ts); a fan-out child's is a delta against its parent's snapshot. */
  checkpoint: string;
  target: StepTarget;
  createdAt: number;
  startedAt?: number;
  updatedAt: number;
  finishedAt?: number;
  lastAction?: string;
  error?: RunError;
  parent?: ChildOf;
  /** Times the run has parked on a mailbox (wake ids are `<id>-<step>-p<parkCount>`). */
  parkCount: number;
  /** The current step's park and delivered sends, when it parked. */
  replay: StepReplay;
  /** Why a worker last gave the current step back. */
  refusal?: string;
  /** A fork's source. */
  forkedFrom?: { runId: string; step: number };
  /** Times the run was reopened after it failed or was cancelled. */
  retries?: number;
  /**
   * When the current step's first try began (epoch ms), once a try of it has failed: its
   * record's `startedAt`. Cleared when the step commits, and when the run is reopened.
   */
  stepStartedAt?: number;
  /**
   * When the current step's next try is due (epoch ms on the store's clock), after a failed try
   * set it to wait. Cleared when the step commits, and when the run is reopened.
   */
  retryAt?: number;
  /** The trace context of the run's start (W3C traceparent); a fan-out child has its parent's request's. */
  trace?: string;
  /** While `throttled`: the budget key the current step waits for. */
  throttledBy?: string;
  /**
   * The last try that wrote the run's stream (with a token, see {@link StreamWrite}): its step,
   * attempt and worker, and whether a transition of that step has ended it since. A step task
   * that finds a try of its step not ended is a restart: its stream gets the restart entry at once.
   */
  streamWriter?: { step: number; attempt: number; worker: string; ended: boolean };
  /** The run's priority (BullMQ's: 1 first); a fan-out child has its parent's. Its tasks carry it. */
  priority?: number;
  /** A turn of a keyed agent (see {@link NewRun.turn}). */
  turn?: AgentTurn;
}

/**
 * The record {@link RunStore.create} makes of `run`, as {@link RunStore.loadForStep} would read it
 * back: what a caller that made a run and runs its first step itself starts from.
 */
export function newRunRecord(run: NewRun): StoredRun {
  return {
    id: run.id,
    flow: run.flow,
    fingerprint: run.fingerprint,
    status: run.takenBy === undefined ? 'queued' : 'running',
    step: 0,
    attempt: 0,
    checkpoint: run.checkpoint,
    target: { ...run.target },
    createdAt: run.now,
    ...(run.takenBy === undefined ? {} : { startedAt: run.now }),
    updatedAt: run.now,
    parkCount: 0,
    replay: { sent: 0 },
    ...(run.forkedFrom ? { forkedFrom: { ...run.forkedFrom } } : {}),
    ...(run.trace === undefined ? {} : { trace: run.trace }),
    ...(run.priority === undefined ? {} : { priority: run.priority }),
    ...(run.turn === undefined ? {} : { turn: run.turn }),
  };
}

/**
 * A step's task that the scheduler gave back after the worker holding it lost it without a word
 * (BullMQ's stalled-job check: its lock expired, the worker dead, or its main loop blocked past the
 * lock), now loaded by another worker ({@link RunStore.loadForStep}): a takeover the run's event log
 * records. Unlike a lapsed heartbeat ({@link RunStore.noteTakeover}) nothing noted who held it.
 */
export interface StalledTask {
  /** Names this recovery of the task (BullMQ: job id and stall count): it is logged once. */
  key: string;
  /** The step of the task (its job's), which the run may have gone past in that job. */
  step: number;
  /** The worker that held it, when known (BullMQ: the one whose last heartbeat named its job). */
  from?: string;
}

/** A run as {@link RunStore.loadForStep} reads it for a step. */
export interface LoadedRun extends StoredRun {
  /** Woken from a park: the messages reserved for the step's receives, by receive ordinal. */
  reserved?: ReadonlyMap<number, Message>;
}

/** A fan-out child's place: its parent, the parent's step that fanned out, its index. */
export interface ChildOf {
  id: string;
  step: number;
  index: number;
}

/** A stored run with what `get` shows beside it. */
export interface RunRecord {
  run: StoredRun;
  /** Errors of failed tries, oldest first (capped). */
  errors: ErrorRecord[];
  conflicts: MergeConflict[];
  /** Fan-out progress, while the run waits on children. */
  children?: { total: number; ended: number; failed: number };
}

/**
 * What a commit writes, by mode (all modes: only if the run stands at the step and has not ended;
 * a cancel ends a run at once, so a step of a cancelled run commits nothing):
 * - `next`: the new checkpoint and target, step counter + 1, attempt 0, no `stepStartedAt`; the
 *   step's reserved messages are consumed and its sends delivered.
 * - `retry`: the checkpoint (the visit's prep result kept), attempt + 1, `stepStartedAt` if unset,
 *   `retryAt`.
 * - `completed`: as `next`, then the run ends `completed` with its last action.
 * - `failed`: only the error (the checkpoint may hold a half-done step); reserved messages go
 *   back to their mailboxes.
 * - `throttled`: the checkpoint (the visit's prep result kept), status `throttled` with the key
 *   (`throttledBy`) that has no budget, `stepStartedAt` if unset; the attempt is unchanged (a
 *   throttled visit uses no try). The next admission sets the status back to `running`.
 */
export type CommitMode = 'next' | 'retry' | 'completed' | 'failed' | 'throttled';

export interface CommitFields {
  checkpoint?: string;
  target?: StepTarget;
  /** Errors to append to the run's history; for mode `failed` the last is the one that failed it. */
  errorRecords?: ErrorRecord[];
  /** The step's sends, delivered if it commits (modes next and completed). */
  outbox?: OutgoingMessage[];
  runError?: RunError;
  lastAction?: string;
  conflicts?: MergeConflict[];
  /** The step's encoded history record (modes next and completed). */
  record?: string;
  /** Mode `throttled`: the budget key the visit waits for. */
  throttledBy?: string;
  /** Modes `retry` and `throttled`: when the step's first try began, kept as `stepStartedAt` unless set already. Epoch ms. */
  stepStartedAt?: number;
  /** Mode `retry`: when the next try is due (epoch ms), kept as `retryAt`. */
  retryAt?: number;
  /** The values the checkpoint and record reference, claimed for the run if it commits (see {@link RunStore.values}). */
  values?: ValueClaim;
  /** Epoch ms. */
  now: number;
  /**
   * Direct hand-off: the worker that takes the first run this commit wakes, and runs its step
   * itself instead of making its wake due (see StepDriverOptions.continueSteps). The wake is kept
   * among that worker's taken wakes until released, so a survivor that takes over a dead worker
   * makes it due; it is not among the reply's `wakes` but its `taken`. Likewise the child a fan-out
   * child's end starts, when its report says {@link ChildEndReport.take}.
   */
  takenBy?: string;
  /**
   * Modes `completed` and `failed` of an agent's turn: the turn's end (AgentStore.endTurn),
   * committed with the run's in the same transition, so that the state, the message's consumption
   * and the next turn's start go with the run's last step. A store ends the turn here only when it
   * can (on Redis: the key in the run's partition) and then answers {@link CommitReply.turnEnded};
   * otherwise it ignores this, and the caller ends the turn after the commit.
   */
  turnEnd?: TurnEndCommit;
  /**
   * Modes `next` and `completed`: turns of agents among the outbox's addresses to start in the
   * same transition when they are idle (AgentStore.activateAgent), so that a send to an idle agent
   * starts its turn with the send. A store starts those it can (on Redis: agents in the run's
   * partition) and answers them in {@link CommitReply.started}; the caller starts the others.
   */
  starts?: TurnStart[];
}

/** An agent's turn end committed with its run's last step (see {@link CommitFields.turnEnd}). */
export interface TurnEndCommit {
  /** The agent's address. */
  agent: string;
  end: TurnEnd;
}

/** What a commit did. */
export type CommitResult = 'committed' | 'stale' | 'missing';

export interface CommitReply {
  result: CommitResult;
  /** When a fan-out child ended here: what recording its end on the parent asks for. */
  parent?: ChildEndedResult;
  /** Wake ids of runs parked on mailboxes that got a message here. */
  wakes: string[];
  /** The wake id the worker named by `takenBy` took (see {@link CommitFields.takenBy}). */
  taken?: string;
  /**
   * The turn's end, when the store committed it with the run's (see {@link CommitFields.turnEnd}):
   * as AgentStore.endTurn answers.
   */
  turnEnded?: { result: 'ended' | 'stale'; next?: AgentActivation };
  /**
   * The run of `taken`, read for its wake in the same transition as {@link RunStore.loadForStep}
   * reads it (its parked receive's message reserved), when the store could: the worker runs the
   * woken step without reading it again.
   */
  takenRun?: LoadedRun;
  /** The {@link CommitFields.starts} this transition took, with the turns they started. */
  started?: TurnStarted[];
}

/** How a fan-out child's end is reported to its parent by the commit that ends it. */
export interface ChildReport extends ChildEndReport {
  parent: ChildOf;
}

/** A child's end as recorded on its parent. */
export interface ChildEndReport {
  /** How it ended (a report without one: see {@link childOutcomeOf}; none: `cancelled`). */
  outcome?: ChildOutcome;
  failFast: boolean;
  /** The parent's error if it fails fast because of this child. */
  parentError: RunError;
  /**
   * Hashes of the values the outcome's patch references (stored already: the child claimed
   * them), claimed for the parent when the end is recorded (a store whose child lives apart from
   * its parent copies them to the parent's side first).
   */
  values?: string[];
  /** Epoch ms. */
  now: number;
  /**
   * The caller runs the next child itself (a chain, StepDriverOptions.continueSteps): an end
   * that leaves room in the fan-out's window starts a child at once, even when the window's
   * `refill` would wait for more room, so that the child that ends hands its slot to the next.
   * Reported by a commit with {@link CommitFields.takenBy}, the first child started is made with
   * the commit and taken by that worker (`ChildEndedResult` `made`): in the same transition, or
   * (where children live apart from their parent) in one right after it.
   */
  take?: boolean;
}

/** The children of a fan-out at indices `first` to `first + count - 1`. */
export interface ChildRange {
  /** The index of the first child. */
  first: number;
  /** How many children, at least 1. */
  count: number;
}

/** What recording a child's end asks the caller to do. */
export type ChildEndedResult =
  | { type: 'ignored' } // the parent no longer waits on this fan-out
  | {
      type: 'recorded';
      /** Start these children now, if any. */
      start: ChildRange | undefined;
      /**
       * The first of them, made with the commit and taken by the committing worker (see
       * {@link ChildEndReport.take}): its record, and its first step's task id is among the
       * worker's taken tasks. The caller starts the others.
       */
      made?: StoredRun;
    }
  | { type: 'parent-ended' } // the parent ended here (it failed fast)
  | { type: 'fan-in' } // it was the last child: enqueue the parent's fan-in step
  | { type: 'duplicate' }; // recorded before (a redelivery)

/** `cancelled-waiting`: cancelled while waiting on a fan-out, whose children need cancelling. */
export type CancelResult = 'missing' | 'ended' | 'cancelled' | 'cancelled-waiting';

export interface FanOutCommit {
  /** The parent's encoded checkpoint, waiting. */
  checkpoint: string;
  target: StepTarget;
  /** The request without per-child data (params, items). */
  request: FanOutRequest;
  /** The parent's `shared` when it fanned out, encoded. */
  snapshot: string;
  total: number;
  /** Children started now (the window, or all). */
  startNow: number;
  /**
   * Most children in flight (started, not ended) at a time: the fan-out's concurrency limit,
   * else a window of the driver's choosing. Each recorded end may start more, never past it.
   */
  window: number;
  /**
   * Children started together: an end starts more only once at least this many (or all those
   * left) fit in the window, so a large fan-out starts its children in batches rather than one
   * by one. 1: each end starts the next child at once.
   */
  refill: number;
  /** Runs: the children's first target. */
  childTarget?: StepTarget;
  outbox: OutgoingMessage[];
  /** The step's encoded history record. */
  record?: string;
  /** The values the checkpoint, snapshot and record reference, claimed for the run if it commits. */
  values?: ValueClaim;
  /** Epoch ms. */
  now: number;
}

export interface ParkReply {
  result: CommitResult;
  /** The park count after this park: the wake id is `<id>-<step>-p<parkCount>`. */
  parkCount: number;
  /** A message is already at the address: wake at once. */
  ready: boolean;
  wakes: string[];
  /** The wake id the worker named by `takenBy` took (see {@link CommitFields.takenBy}). */
  taken?: string;
  /** The run of `taken`, read for its wake in the same transition (see {@link CommitReply.takenRun}). */
  takenRun?: LoadedRun;
  /** The starts this transition took (see {@link CommitReply.started}). */
  started?: TurnStarted[];
}

/** What one try of a step appends to its run's stream. Times are epoch ms. */
export interface StreamWrite {
  step: number;
  /** The try's attempt (the step's try index). */
  attempt: number;
  /** Names the try, for the attempt of a try after one cut short; absent for a fan-out item. */
  token?: string;
  /**
   * With `token`: the worker running the try, the node it visits and the time of this write, for
   * a restart entry (see {@link RunStore.appendStream}). @defaultValue `''`, the first entry's node and time
   */
  worker?: string;
  node?: string;
  at?: number;
  /** The item's index, for entries an item of a ParallelBatchNode fan-out wrote. */
  item?: number;
  /** Entries in emit order; `data` encoded as JSON. */
  entries: { node: string; at: number; data: string }[];
}

/** What {@link RunStore.appendStream} did: the ids and the attempt the entries got, or why not. */
export type StreamAppendReply =
  { result: 'appended'; attempt: number; ids: string[] } | { result: 'ended' | 'missing' };

/** An entry of a run's stream as a store holds it: an entry, or the marker its end left. */
export type StoredStreamEntry = StreamEntry | { id: string; end: FinalRunStatus };

/** Stream entries kept per run by default, oldest dropped first. */
export const DEFAULT_MAX_STREAM_ENTRIES = 10_000;

/** A waiting parent's fan-out as stored. */
export interface StoredFanOut {
  /** Without per-child data (params, items). */
  request: FanOutRequest;
  total: number;
  started: number;
  ended: number;
  failed: number;
  /** The parent's step counter once it fanned out (children belong to it). */
  step: number;
  /** The parent's flow and graph fingerprint. */
  flow: string;
  fingerprint: string;
  /** Runs: the children's first target. */
  childTarget?: StepTarget;
}

/** Id of child `index` of the fan-out a parent made at `parentStep`. */
export function childRunId(parentId: string, parentStep: number, index: number): string {
  return `${parentId}.${parentStep}.${index}`;
}

/** Id of the wake of a run parked at `step` for the `parkCount`th time. */
export function wakeId(runId: string, step: number, parkCount: number): string {
  return `${runId}-${step}-p${parkCount}`;
}

export function isFinal(status: RunStatus | undefined): status is 'completed' | 'failed' | 'cancelled' {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}
