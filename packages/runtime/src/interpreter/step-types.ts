/**
 * The types the step interpreter, the fan-out and the engines share, in a module of types only,
 * so that no import cycle runs through them (langgraphjs `pregel/types.ts`).
 */
import type { RunContext } from '../core/run-context.js';
import type { ErrorRecord } from '../errors/error-record.js';
import type { Mailbox, Message, Received } from '../mailbox/message.js';
import type { Checkpoint } from './checkpoint.js';
import type { Json, JsonObject } from '../json/json.js';
import type { PatchOperation } from '../json/merge-patches.js';
import type { BudgetLimit } from '../kernel/budget-store.js';
import type { ReminderChange } from '../agent/reminders.js';

/** What the next step of a run targets. */
export interface StepTarget {
  /** The node the step visits; `undefined` for a step that only crosses flow boundaries. */
  node: string | undefined;
  /** Tries the step gets (the node's `maxRetries`; 1 for a step that only crosses boundaries). */
  maxAttempts: number;
  /**
   * The queue whose workers run the step (the node's `queue`); absent: `'default'`. A step that
   * only crosses flow boundaries runs on the default queue; a fan-in, on its fan-out's.
   */
  queue?: string;
}

export interface StepContext {
  /** 0-based index of this try of the step. */
  attempt: number;
  /** Aborts the running `exec` (a cancelled run). */
  signal?: AbortSignal | undefined;
  /** Run facts for node code, without the attempt (each try sets its own). */
  run?: (Omit<RunContext, 'attempt'> & { message?: Message; agent?: string }) | undefined;
  /** The step's mailbox; without one, node code cannot send or receive (fan-out items). */
  mailbox?: (Mailbox & StepMailboxPort) | undefined;
  /** The step's stream (`this.emit`); without one, emitted entries go nowhere. */
  emitter?: StepEmitterPort | undefined;
  /** Epoch ms, for error records. */
  now: () => number;
  /** The budgets of nodes' `limits` (flow control); without it, limits are not enforced. */
  budget?: StepBudgetPort | undefined;
}

/**
 * What the interpreter needs of flow control (the kernel's BudgetGate implements it): one
 * admission per try of `exec`, given back when the try ends.
 */
export interface StepBudgetPort {
  /** Takes budget for one try of `exec` of `node`, or says which key refused it and for how long (ms). */
  admit(
    node: string,
    limits: readonly BudgetLimit[],
  ): Promise<{ admitted: true } | { admitted: false; key: string; delayMs: number }>;
  /** Ends the admitted try: its concurrency leases go back (its rate units stay counted). */
  release(): Promise<void>;
  /** `this.spend`: the admitted try really took `units` of `key`'s rate. */
  spend(key: string, units: number): Promise<void>;
  /** A `RateLimitedError`: holds `keys` back for everyone for `forMs` ms. */
  hold(keys: readonly string[], forMs: number): Promise<void>;
}

/** What the interpreter needs of a step's mailbox (StepMailbox implements it). */
export interface StepMailboxPort {
  readonly outbox: OutgoingMessage[];
  readonly parkRequest: ParkRequest | undefined;
  /** A `handoff` in `transfer` mode: the run (an agent's turn) ends when this step commits. */
  readonly handedOff?: boolean;
  /** What `this.remind` / `this.cancelReminder` did, in call order: applied with the commit. */
  readonly reminders?: ReminderChange[];
  replayAfterPark(): StepReplay;
  /**
   * What the step did beside its commit, done once its code has run and before it commits: the
   * shared-memory updates it staged (`this.memory(...).update`) are written, one write per
   * memory, and the messages it received in a conversation are recorded there.
   * @throws QueueflowError `MEMORY_CONFLICT`.
   */
  beforeCommit?(): Promise<void>;
  /** Records the messages the step received in a conversation (also when it parks, before its sends leave). */
  recordReceipts?(): Promise<void>;
  /** A try of `exec` starts: resolves a mark for {@link StepMailboxPort.tryFailed}. */
  tryStarted?(): number;
  /** The try begun at `mark` failed: what it staged is dropped (a failed try writes nothing). */
  tryFailed?(mark: number): void;
  /** The updates staged so far, as JSON: kept in the checkpoint while a try of `exec` is retried. */
  stagedMemory?(): Json | undefined;
  /** Puts back updates kept by {@link StepMailboxPort.stagedMemory} (a retried try's step). */
  restoreMemory?(staged: Json): void;
}

/**
 * What node code's `this.emit` writes to on an engine (the step driver's StepStream implements
 * it): appends one entry, `data` already checked and encoded as JSON, without waiting.
 */
export interface StepEmitterPort {
  emit(node: string, data: string): void;
}

/**
 * A parallel class asks its engine to fan out (DESIGN "Fan-out"):
 * - `runs`: a ParallelBatchFlow; one child run per param set, each walking the flow's graph from
 *   `start` with `params[i]`, from a snapshot of the parent's `shared`;
 * - `items`: a ParallelBatchNode; one item task per item, `exec` with the node's retry policy.
 */
export type FanOutRequest =
  | {
      kind: 'runs';
      flow: string;
      start: string;
      /** Merged params of each child, in param-set order. */
      params: JsonObject[];
      concurrency: number | undefined;
      onItemError: OnItemError;
      /** The trace context of the step that fanned out (set by the driver as it stores the request). */
      trace?: string;
      /** The priority of the run that fanned out, which its children inherit (set by the driver). */
      priority?: number;
    }
  | {
      kind: 'items';
      node: string;
      params: JsonObject;
      items: Json[];
      concurrency: number | undefined;
      onItemError: OnItemError;
      maxAttempts: number;
      /** The node's queue, where its items and its fan-in run; absent: `'default'`. */
      queue?: string;
      /** The trace context of the step that fanned out (set by the driver as it stores the request). */
      trace?: string;
      /** The priority of the run that fanned out, which its items inherit (set by the driver). */
      priority?: number;
    };

/** What a failed child does to its fan-out: fail the parent at once, or be collected for `post`. */
export type OnItemError = 'fail-fast' | 'collect';

/** How one child ended. `patch` (runs) is its change to the snapshot as JSON Patch. */
export type ChildOutcome =
  | { status: 'completed'; patch?: PatchOperation[]; lastAction?: string | undefined; value?: Json }
  | { status: 'failed'; error: ErrorRecord }
  | { status: 'cancelled' };

/**
 * What a step did. `checkpoint` is the state to commit (the step mutates the one it was given).
 *
 * - `next`: commit, then run `target` as a new step.
 * - `retry`: commit (the visit's `prep` result is kept), then run the same step again after
 *   `delayMs` with the next attempt index.
 * - `completed` / `failed`: the run ended. On `failed`, commit only the status and `error`:
 *   the checkpoint may hold the half-done step.
 * - `fan-out`: commit, start the children in `fanOut`, and resume with `resumeFanOut` when the
 *   last one has ended.
 * - `throttled`: a budget (the node's `limits`, or a `RateLimitedError`) refused the try: commit
 *   the checkpoint (the visit's prep result kept) and run the same step again after `delayMs`
 *   (or when woken) with the same attempt index: no try used.
 * - `park`: a `receive` found its mailbox empty. Keep the stored checkpoint, deliver the outbox,
 *   keep `replay` with the run, and run the same step again when a message comes to
 *   `park.address` or at `park.deadline`.
 */
export type StepOutcome = StepResult & {
  /** Messages the step sent: deliver them with the commit (or the park); drop them otherwise. */
  outbox: OutgoingMessage[];
  /** An agent's turn: its reminders set or cancelled (applied when the step commits). */
  reminders?: ReminderChange[];
  /**
   * Every try of `exec` that failed during this step, oldest first, including one that
   * `execFallback` then rescued. On `failed`, `error` is the last of them when exec's error
   * failed the run, else (an error in prep, post or the fallback) it comes on top.
   */
  errors: ErrorRecord[];
  /** The node whose visit the step ended, and the action its `post` returned. */
  visited?: { node: string; action: string | undefined };
};

/** What the step's body decides; the interpreter adds the errors of failed tries and the outbox. */
export type StepResult =
  | { type: 'next'; checkpoint: Checkpoint; target: StepTarget }
  | { type: 'retry'; checkpoint: Checkpoint; target: StepTarget; error: ErrorRecord; delayMs: number }
  | { type: 'throttled'; checkpoint: Checkpoint; target: StepTarget; key: string; delayMs: number }
  | { type: 'completed'; checkpoint: Checkpoint; lastAction: string | undefined }
  | { type: 'failed'; checkpoint: Checkpoint; error: ErrorRecord }
  | { type: 'fan-out'; checkpoint: Checkpoint; fanOut: FanOutRequest }
  | {
      type: 'park';
      /** Unchanged from the start of the step: a parked step commits nothing but its sends. */
      checkpoint: Checkpoint;
      park: ParkRequest;
      /** What the step must find when it runs again: keep it with the run until the step commits. */
      replay: StepReplay;
    };

/** One try of an item of a ParallelBatchNode fan-out: its value, a retry, or the failure. */
export type ItemTryOutcome = (
  | { type: 'completed'; value: Json | undefined }
  | { type: 'retry'; error: ErrorRecord; delayMs: number }
  | { type: 'throttled'; key: string; delayMs: number }
  | { type: 'failed'; error: ErrorRecord }
) & {
  /** Failed tries of this attempt (the failed try itself, or one the fallback rescued). */
  errors: ErrorRecord[];
};

/** A message a step sends, delivered when the step commits or parks. */
export interface OutgoingMessage {
  address: string;
  message: Message;
}

/**
 * Where a parked step waits: receive call number `ordinal` of the step, on `address`, or (a
 * `receiveAny` of several) on each of `addresses`, whose first is `address`.
 */
export interface ParkRequest {
  ordinal: number;
  address: string;
  /** Every address a `receiveAny` waits on (two or more); absent for a `receive`. */
  addresses?: string[];
  /** Epoch ms after which that receive resolves `undefined`; `null` waits as long as it takes. */
  deadline: number | null;
  /**
   * A send (`ordinal` counts sends) waiting for room in the full inbox at `address`
   * (`onFull: 'park'`): it waits on no mailbox (`addresses` is empty) and looks again at
   * `deadline`.
   */
  room?: true;
  /**
   * The receive of an `ask` (or a delegating `handoff`) from an agent's turn: agent `from` waits
   * on agent `to`'s answer at `address`. The store keeps it as a wait-for edge while the run is
   * parked, and rejects the park that would close a cycle of such edges (`ASK_CYCLE`).
   */
  ask?: { from: string; to: string };
}

/** What earlier runs of the same step left behind (the step parked, then woke). */
export interface StepReplay {
  /** Sends of this step already delivered (when it parked): the first `sent` sends are skipped. */
  sent: number;
  /** Where the step parked last. */
  parked?: ParkRequest | undefined;
  /** Receive calls (ordinals) that timed out in an earlier run of the step: they stay `undefined`. */
  timedOut?: number[] | undefined;
}

/**
 * How an engine reserves messages for a step: receive call `ordinal` gets the message reserved
 * for it by an earlier run of this step (a replay), else the head of `address`, now reserved for
 * this step until it commits, else `undefined`.
 */
export interface MessageReservations {
  reserve(ordinal: number, address: string): Promise<Message | undefined>;
  /**
   * As `reserve`, for a `receiveAny`: the message reserved for `ordinal` before, with its
   * address, else the head of the first of `addresses` that holds one.
   */
  reserveAny(ordinal: number, addresses: readonly string[]): Promise<Received | undefined>;
}
