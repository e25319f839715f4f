import type { ErrorRecord, RunError } from '../errors/error-record.js';

export type { RunError };
import type { FlowDefinition } from '../interpreter/flow-definition.js';
import type { Json, JsonObject } from '../json/json.js';
import type { MergeConflict, PatchOperation } from '../json/merge-patches.js';
import type { Message } from '../mailbox/message.js';
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
  EngineSendOptions,
  ForkConversationOptions,
} from '../agent/agent-types.js';
import type { MemoryInfo } from '../agent/shared-memory.js';
import type { FlowGraph } from '../interpreter/mermaid.js';
import type { RunEvent } from './run-event.js';

export type { RunEvent };
import type { StreamEntry, StreamOptions, StreamRestart } from '../stream/stream-types.js';

export type { StreamEntry, StreamOptions, StreamRestart };

export type { FlowGraph };

import type { ScheduleInfo, ScheduleOptions, ScheduleRunOptions } from './schedule-types.js';

export type { ScheduleInfo, ScheduleOptions, ScheduleRunOptions };

/**
 * A run's status. `queued`: created, no step taken; `running`: a step is queued or running;
 * `waiting`: parked on children (fan-out) or a mailbox, holding no worker; `throttled`: its step
 * waits for a budget (a node's `limits`, or a `RateLimitedError`), holding no worker and using no
 * try (`throttledBy` names the key); then one of the final statuses `completed`, `failed`,
 * `cancelled`.
 */
export type RunStatus = 'queued' | 'running' | 'waiting' | 'throttled' | 'completed' | 'failed' | 'cancelled';
export type FinalRunStatus = 'completed' | 'failed' | 'cancelled';

/**
 * Options of a run. `shared` and params are typed as any object (interfaces included); the
 * engine checks at run time that they survive JSON.
 */
export interface RunOptions<P extends object = object> {
  /** The flow's params (rule S6). Must survive JSON. @defaultValue `{}` */
  params?: P;
  /**
   * Makes the start happen once: a second `start`/`run` with the same key while the first run is
   * retained returns the first run's handle and starts nothing (Stripe and Trigger.dev semantics).
   * Atomic with the run's creation: two clients racing get one run. At most 256 characters.
   */
  idempotencyKey?: string;
  /**
   * The run's priority, BullMQ's meaning: 1 runs first, higher numbers later, up to 2,097,151;
   * a run without one goes before every run with one (BullMQ runs unprioritized jobs first).
   * Every step of the run, its wakes and its fan-out children and items inherit it; it orders
   * waiting steps within a queue. LocalEngine orders its steps the same way.
   * @defaultValue none
   * @throws QueueflowError `INVALID_OPTION` (from `start`/`run`) for anything but an integer from 1 to 2,097,151.
   */
  priority?: number;
}

/** How a run ended. `shared` is the last committed shared store. */
export interface RunResult<S extends object = JsonObject> {
  id: string;
  status: FinalRunStatus;
  shared: S;
  /** The root's final action (rule S7); absent for `undefined`. */
  lastAction?: string;
  error?: RunError;
}

export interface RunHandle<S extends object = JsonObject> {
  id: string;
  /**
   * Resolves when the run has ended, also if it ended before the call.
   * @throws QueueflowError `RESULT_TIMEOUT` when `timeoutMs` passes first (the run goes on);
   *   `CORRUPT_RUN` when the run has ended but its checkpoint cannot be read (a corrupted record:
   *   the run failed with that error too).
   */
  result(options?: ResultOptions): Promise<RunResult<S>>;
}

/** Options of awaiting a run's result. */
export interface ResultOptions {
  /** Longest wait, in milliseconds; then the promise rejects with `RESULT_TIMEOUT`. @defaultValue no limit */
  timeoutMs?: number;
}

/** What `list` shows of a run: its record without `shared` and histories. Times are epoch milliseconds. */
export interface RunSummary {
  id: string;
  flow: string;
  status: RunStatus;
  /** Id of the node the next (or running) step visits. */
  currentNode?: string;
  /** Steps committed so far (the step counter). */
  steps: number;
  /** Failed tries of the current step so far (for a failed run: every try of the failed step); a count. */
  attempts: number;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  updatedAt: number;
  lastAction?: string;
  error?: RunError;
  /** The parent run, for a fan-out child. */
  parentId?: string;
  /**
   * Why a worker gave the current step back without running it, when one did (RedisEngine: a
   * worker with other code deployed, or without this flow); cleared when a step commits.
   */
  refusal?: string;
  /** For a run made by {@link Engine.fork}: the run and the committed step it started from. */
  forkedFrom?: { runId: string; step: number };
  /**
   * A turn of a keyed agent: the agent's address, the turn's number (1 for the key's first) and
   * the id of the message it handles (`engine.agent(ref)` shows the key).
   */
  agent?: { ref: string; turn: number; messageId: string };
  /** Times the run went on after failing or being cancelled ({@link Engine.retry}). */
  retries?: number;
  /** While `throttled`: the budget key its step waits for (empty for a `RateLimitedError` of a node without limits). */
  throttledBy?: string;
  /** The run's priority ({@link RunOptions.priority}), which its steps and children inherit. */
  priority?: number;
  /**
   * The queue of the step the run waits for or runs (its node's `queue`), while it has not
   * ended and is not waiting on children or a mailbox.
   */
  queue?: string;
  /**
   * Why the run's next step waits: no live worker serves its queue (RedisEngine: say, no worker
   * started with `--queues llm` for a node with `queue: 'llm'`). Set by `get` and `list` while
   * the run is `queued` or `running`; workers serving that queue take the step once they start.
   */
  noWorker?: string;
}

/** What an engine knows of a run (`get`). Times are epoch milliseconds. */
export interface RunInfo extends RunSummary {
  /** Errors of failed tries, oldest first (the last 50). */
  errors: ErrorRecord[];
  /** Paths that two fan-out children both wrote, resolved in param-set order. */
  conflicts: MergeConflict[];
  /** Fan-out progress while waiting on children. */
  children?: { total: number; ended: number; failed: number };
  /** The last committed shared store. */
  shared: JsonObject;
}

/** Filter of {@link Engine.list}. */
export interface ListRunsOptions {
  status?: RunStatus;
  flow?: string;
  /** Most runs returned, newest first. @defaultValue 100 */
  limit?: number;
  /** Matching runs skipped first (paging). @defaultValue 0 */
  offset?: number;
}

/**
 * Runs registered flows. `LocalEngine` keeps runs in memory in this process; `RedisEngine`
 * (`@queueflow/worker`) keeps them in Redis and lets workers anywhere take the steps. Both give
 * the same final `shared` and last action for the same flow (DESIGN: one semantics, two engines).
 *
 * Every method that takes a `runId` throws QueueflowError `INVALID_OPTION` (before it reads or
 * writes anything) for one that is not a non-empty string, holds `:` (no run id does), or is not
 * well-formed Unicode (a lone surrogate); so do those that take an idempotency key, an address or
 * a message id that is not well-formed Unicode.
 */
export interface Engine {
  /** Starts a run and waits for it to end. Never rejects for a failed run: see `status`. */
  run<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options?: RunOptions,
  ): Promise<RunResult<S>>;
  /**
   * Starts a run. @throws QueueflowError `NOT_JSON` (naming the path) when `shared` or params
   * would not survive JSON, `UNKNOWN_FLOW` for an unregistered flow, `INVALID_OPTION` for a bad
   * option (an idempotency key that is not well-formed Unicode); nothing is written then.
   */
  start<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options?: RunOptions,
  ): Promise<RunHandle<S>>;
  /** The run's record, finished runs included (within the engine's retention). */
  get(runId: string): Promise<RunInfo | undefined>;
  /**
   * Resolves when run `runId` has ended, also if it already has.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown run id; `RESULT_TIMEOUT` after `timeoutMs`.
   */
  result(runId: string, options?: ResultOptions): Promise<RunResult>;
  /**
   * Runs started with `run`/`start`, newest first (fan-out children are seen through their
   * parent), without `shared` and histories: `get` one for those.
   */
  list(options?: ListRunsOptions): Promise<RunSummary[]>;
  /**
   * Cancels the run now: its status becomes `cancelled`, and a step in flight commits nothing
   * (the run stops at that step boundary). No-op once ended. The run's event log gets a
   * `cancelled` entry naming `options.by`.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown run id.
   */
  cancel(runId: string, options?: CancelOptions): Promise<void>;
  /**
   * Sends a message to the mailbox at `address` from outside any run, e.g. a person answering an
   * agent; it wakes a run waiting on that address.
   * @returns the message's id (the `id` its receiver sees).
   * @throws QueueflowError NOT_JSON for a body that would not survive JSON; TypeError (code `INVALID_ARGUMENT`) for a bad address;
   *   QueueflowError `INVALID_OPTION` for an address that is not well-formed Unicode;
   *   `MAILBOX_FULL` for an agent whose inbox holds its type's `capacity`.
   *
   * An agent's address (`AgentDefinition.ref(key)`) is its inbox: a message to an idle agent
   * starts its turn (its first message activates it). With `conversation`, the message starts or
   * continues a conversation (a new one's id is the message's id), counted against its budget.
   */
  send(address: string, body: Json, options?: EngineSendOptions): Promise<string>;
  /**
   * Request/reply from outside any run: sends `body` to `address` with a fresh reply address and
   * waits up to `options.timeoutMs` (ms, default 30 s) for the answer (`this.reply(this.message, …)`
   * in an agent's turn, `reply` in a run, or {@link Engine.answer}).
   * @returns the answer, or `undefined` after the timeout.
   */
  ask(address: string, body: Json, options?: AskOptions): Promise<Message | undefined>;
  /**
   * Publishes `body` on `topic` from outside any run: each agent type of this engine that
   * subscribes to the topic (`defineAgent`'s `subscribe`) gets it at the keys its mapping names,
   * all with one message id (`topic` set). The mailboxes are written in windows of 256; a
   * subscriber whose inbox is at its type's `capacity` is skipped and listed in `full`.
   * Subscribers added later do not get it. From a turn or a step, `this.publish` leaves with the
   * step's commit instead (exactly once, with the step).
   * @throws QueueflowError `INVALID_OPTION` for a bad topic name (letters, digits, `_ . : / -`) or
   *   a mapping that returns no key, `NOT_JSON`, `PAYLOAD_TOO_LARGE`.
   */
  publish(topic: string, body: Json, options?: PublishOptions): Promise<PublishResult>;
  /**
   * A conversation (README "Conversations"): its status, turns, participants, the messages its
   * turns handled, its turns parked now (`waits`) and its budget; `undefined` for an unknown id.
   * @throws QueueflowError `INVALID_OPTION` for an id that is not 1 to 200 characters without whitespace.
   */
  conversation(id: string): Promise<ConversationInfo | undefined>;
  /** Conversation ids, newest first, a page at a time (`limit`, default 100; `cursor` of the page before). */
  conversations(options?: { limit?: number; cursor?: string }): Promise<{ ids: string[]; cursor?: string }>;
  /**
   * Shared memory `name` (node code's `this.memory`): its document, its version (`{}` at 0 before
   * its first update) and its kept changes as JSON Patch, oldest first, with their writers.
   * @throws QueueflowError `INVALID_OPTION` for a name that is not 1 to 200 characters without whitespace.
   */
  memory(name: string): Promise<MemoryInfo>;
  /**
   * Forks conversation `id` at message `atMessage` (an id of its `messages`): a new conversation
   * whose agents are copies of the ones that took a turn in it, under fork keys
   * (`agent:<type>/<key>~<tag>`, in `agents`), each with its state at that message; the message is
   * delivered again to its agent's copy, with `body` in its place and `patch` (JSON Patch) applied
   * to that copy's state when given. The turns of the fork send to the copies. The original is
   * untouched. The fork has the original's budget, counted afresh.
   * @throws QueueflowError `INVALID_OPTION` for an unknown conversation or message, or a patch
   *   that does not apply; `RUN_NOT_FOUND` when a turn's run it reads has expired.
   */
  forkConversation(id: string, options: ForkConversationOptions): Promise<ConversationFork>;
  /**
   * A keyed agent: its last committed state, committed turns, inbox depth, running turn and dead
   * letters; `undefined` for a key never activated (or deleted).
   * @throws QueueflowError `INVALID_OPTION` for a `ref` that is no agent address.
   */
  agent(ref: string): Promise<AgentInfo | undefined>;
  /** Agent keys in address order, a page at a time (`limit`, default 100; `cursor` of the page before). */
  agents(options?: ListAgentsOptions): Promise<AgentPage>;
  /**
   * Runs the query function `name` of the agent's type on its last committed state, without a
   * turn. @throws QueueflowError `INVALID_OPTION` for a type the engine lacks or an unknown query.
   */
  query(ref: string, name: string, arg?: Json): Promise<unknown>;
  /** Deletes an agent (state, inbox, dead letters, history; a running turn is cancelled); whether it existed. */
  deleteAgent(ref: string): Promise<boolean>;
  /**
   * Puts a dead letter back at the end of the agent's inbox: its turn runs again.
   * @throws QueueflowError `MESSAGE_NOT_FOUND`.
   */
  redeliver(ref: string, messageId: string): Promise<void>;
  /** An agent's turns, oldest first (the last 100): each with its run, message and state patch. */
  agentHistory(ref: string): Promise<AgentTurnInfo[]>;
  /**
   * The run's committed steps, oldest first, one {@link StepRecord} each (within the per-run cap
   * on records, oldest dropped first).
   * @throws QueueflowError RUN_NOT_FOUND for an unknown (or expired) run id.
   */
  history(runId: string): Promise<StepRecord[]>;
  /**
   * The run's event log, oldest first (the newest 200): the rare transitions its record and
   * step history do not keep once they are over (parked and woken, with the mailbox and message;
   * throttled and released, with the budget key; a try retried; taken over from one worker by
   * another; cancelled, and by whom; forked; retried by an operator), each {@link RunEvent}
   * written with the transition it records. Committed steps are not in it: see `history`.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown (or expired) run id.
   */
  runEvents(runId: string): Promise<RunEvent[]>;
  /**
   * Lets a `failed` or `cancelled` run go on, under the same id, from its last committed
   * checkpoint: the step that did not commit runs again, committed steps do not; the error
   * history is kept. A fan-out parent runs again only the children that did not complete.
   * @throws QueueflowError RUN_NOT_FOUND; `RUN_NOT_RETRYABLE` for a run that is still going or completed.
   * @see Temporal reset, bull-board retry.
   */
  retry(runId: string): Promise<RunHandle>;
  /**
   * Starts a new run from the checkpoint after `step` committed steps of `runId` (0: its
   * initial checkpoint), with `patch` (RFC 6902 JSON Patch) applied to its `shared`. The new
   * run's `forkedFrom` names where it came from.
   * @throws QueueflowError RUN_NOT_FOUND; `INVALID_OPTION` for a step the run has no checkpoint
   *   of (beyond its steps, or dropped by the history cap), a patch that does not apply or one
   *   that replaces the root of `shared` (an operation at path `''`); nothing is written then.
   * @see LangGraph time travel (fork from a checkpoint).
   */
  fork(runId: string, options: ForkOptions): Promise<RunHandle>;
  /** The live workers, from the heartbeats they keep in the store (LocalEngine: itself). */
  workers(): Promise<WorkerInfo[]>;
  /**
   * The budget keys (flow control) used in the last 24 hours, by key: what each holds now
   * against the limits its nodes last asked, and the visits waiting for it (throttled).
   */
  budgets(): Promise<BudgetInfo[]>;
  /**
   * The queues of the deployment (every queue a step was added to, and every queue a live worker
   * serves), each with its tasks by state and the live workers serving it (bull-board's view).
   */
  queues(): Promise<QueueInfo[]>;
  /**
   * Mailboxes with messages waiting or runs parked on them, with the parked runs and (up to
   * `messages` of) the messages: the inbox of what each waiting agent needs.
   */
  mailboxes(options?: MailboxesOptions): Promise<MailboxInfo[]>;
  /**
   * Answers a question an `ask` left at `address`: takes message `messageId` off that mailbox and
   * sends `body` to its `replyTo`, waking the run that asked. A person answering an agent.
   * @throws QueueflowError `MESSAGE_NOT_FOUND` when no such message waits there (already taken or
   *   answered), `INVALID_OPTION` when it has no `replyTo`; NOT_JSON / PAYLOAD_TOO_LARGE for `body`.
   */
  answer(address: string, messageId: string, body: Json): Promise<void>;
  /**
   * Calls `listener` as runs change (a step committed, a run parked or ended, a child ended: each
   * child of a fan-out of up to 199, every ⌊n / 100⌋-th of a fan-out of n children, about every 1 %, beyond), for live views. One subscription
   * per engine however many listeners. Resolves once listening.
   *
   * Changes are announced over Redis pub/sub on a RedisEngine, which loses what is published while
   * the connection is down: `options.resync` is called once it is back, so that a view reads again
   * what it shows.
   */
  watch(listener: (event: RunChange) => void, options?: WatchOptions): Promise<() => void>;
  /**
   * The run's `shared` after `step` committed steps (0: as it started), rebuilt from its history.
   * @throws QueueflowError RUN_NOT_FOUND; `INVALID_OPTION` for a step it has no record of.
   */
  sharedAt(runId: string, step: number): Promise<JsonObject>;
  /**
   * The children of the fan-out a run is waiting on (or made last), in index order: child runs of
   * a ParallelBatchFlow, items of a ParallelBatchNode. `[]` when it has none.
   */
  children(runId: string, options?: { offset?: number; limit?: number }): Promise<ChildSummary[]>;
  /** The graph of a registered flow, for drawing, or `undefined` for a flow this engine does not know. */
  graph(flow: string): Promise<FlowGraph | undefined>;
  /**
   * The run's stream: what its nodes said with `this.emit`, from the beginning (or after entry
   * `from`) and then live as it grows; the iteration ends when the run ends (completed, failed
   * or cancelled). Entries of a try that failed later are delivered too, with their `attempt`:
   * per step, only the entries of its highest attempt belong to the try that went on. A follower
   * that comes back with the `id` of the last entry it got as `from` misses nothing and sees
   * nothing twice. Entries of a ParallelBatchFlow's children are on the child runs' streams.
   *
   * @throws QueueflowError (on the first `next`) `RUN_NOT_FOUND` for an unknown or expired run,
   *   `INVALID_OPTION` for a malformed `from`.
   * @example
   * ```ts
   * for await (const entry of engine.stream(handle.id)) process.stdout.write(String(entry.data));
   * ```
   */
  stream(runId: string, options?: StreamOptions): AsyncIterable<StreamEntry>;
  /**
   * Starts a run of `flow` with `shared` (and `runOptions`) on a schedule: every `every` ms, or
   * at each time a cron pattern names. Replaces the schedule of the same name. One run per tick
   * however many workers run (RedisEngine: a BullMQ job scheduler, whose ticks workers serving
   * the default queue take); a tick while the schedule's last run has not ended starts nothing
   * unless `overlap` is `'allow'`. The schedule lasts until {@link Engine.unschedule}
   * (LocalEngine: until it closes).
   *
   * @throws QueueflowError `INVALID_OPTION` naming the option (a name that is not 1 to 128
   *   letters, digits, `_`, `-` or `.`; neither or both of `every` and `cron`; `every` not an
   *   integer from 1; a pattern or `tz` that does not parse; `tz` without `cron`; a bad
   *   `overlap` or priority), `UNKNOWN_FLOW`, `NOT_JSON` naming the path; nothing is written then.
   * @example
   * ```ts
   * await engine.schedule('nightly-digest', digest, { cron: '0 6 * * *', tz: 'Europe/Paris' }, { items: [] });
   * await engine.schedule('poll', poll, { every: 60_000 }, {}, { params: { feed: 'news' } });
   * ```
   * @see BullMQ job schedulers (`Queue.upsertJobScheduler`).
   */
  schedule<S extends object = JsonObject>(
    name: string,
    flow: FlowDefinition | string,
    options: ScheduleOptions,
    shared: S,
    runOptions?: ScheduleRunOptions,
  ): Promise<void>;
  /**
   * Removes the schedule `name`: no tick follows; runs it started go on.
   * @returns whether there was such a schedule.
   */
  unschedule(name: string): Promise<boolean>;
  /** The schedules, by name, with their next tick and the run each started last. */
  schedules(): Promise<ScheduleInfo[]>;
  /** Releases the engine's resources; runs of a `LocalEngine` stop where they are. */
  close(): Promise<void>;
}

/** One committed step of a run. Times are epoch milliseconds. */
export interface StepRecord {
  /** The step counter before the step: 0 for the first step. */
  step: number;
  /** The node the step visited (for a step that only crossed flow boundaries, the flow). */
  node: string;
  /** The action the visit returned, when it ended one. */
  action?: string;
  /** Tries of `exec` the step made (1 when the first succeeded). */
  tries: number;
  /**
   * When the step's first try began (a step woken from a mailbox park: when it ran again), and
   * when it committed.
   */
  startedAt: number;
  endedAt: number;
  /** The worker that committed it (RedisEngine: `<host>:<pid>:<n>`). */
  worker?: string;
  /** RFC 6902 JSON Patch from `shared` before the step to `shared` after it. */
  patch: PatchOperation[];
  /** A fan-in step: the children it merged (param-set order) and the paths two of them wrote. */
  merged?: { children: number; conflicts: MergeConflict[] };
}

/** Options of {@link Engine.cancel}. */
export interface CancelOptions {
  /**
   * Who cancels, as the run's `cancelled` event names it (kebab-case by convention: the studio
   * says `'studio'`, the CLI `'cli'`). @defaultValue none: the event names no one
   */
  by?: string;
}

export interface ForkOptions {
  /** Committed steps of the source run to start after (0: from its start). */
  step: number;
  /** JSON Patch applied to the fork's `shared`. */
  patch?: PatchOperation[];
  /** Params of the fork. @defaultValue the source run's */
  params?: JsonObject;
}

/** A live worker. Times are epoch milliseconds. */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  /** Steps it runs at once, on each queue it serves. */
  concurrency: number;
  /** Steps it runs now. */
  active: number;
  /** The flows it can run. */
  flows: string[];
  /** The queues it serves (a worker's `queues`; LocalEngine: every queue its flows name). */
  queues: string[];
  startedAt: number;
  lastSeenAt: number;
  /**
   * How long its main event loop had not turned at its last heartbeat, in ms (the heartbeat
   * thread measures it: a long synchronous step or a starved CPU shows here, README "Busy is not
   * dead"); absent where no thread measures it (LocalEngine, a worker of an older version).
   */
  loopLagMs?: number;
}

export interface MailboxesOptions {
  /** Most messages listed per mailbox, oldest first. @defaultValue 20 */
  messages?: number;
}

/** A mailbox and who waits on it. */
export interface MailboxInfo {
  address: string;
  /** Messages waiting. */
  size: number;
  /** The oldest of them, up to `MailboxesOptions.messages`. */
  messages: Message[];
  /** Runs parked on this address. */
  parked: ParkedRun[];
}

/** A run waiting on a mailbox. Times are epoch milliseconds. */
export interface ParkedRun {
  runId: string;
  flow: string;
  /** The node whose step waits. */
  node?: string;
  /** When it parked. */
  since: number;
  /** When its `receive` gives up; `null`: it waits as long as it takes. */
  deadline: number | null;
}

/** One child of a fan-out. Times are epoch milliseconds. */
export interface ChildSummary {
  index: number;
  /** The child run's id (ParallelBatchFlow); items have none. */
  runId?: string;
  status: RunStatus;
  startedAt?: number;
  finishedAt?: number;
  error?: RunError;
}

/** Options of {@link Engine.watch}. */
export interface WatchOptions {
  /**
   * Called when changes may have been missed: the subscription was made again after its
   * connection was lost (a Redis restart or failover). Read again what you show. Never called by
   * a LocalEngine.
   */
  resync?: () => void;
}

/**
 * A budget key now (flow control: a node's `limits`), as {@link Engine.budgets} shows it. The
 * limits are those the last visit that drew from the key asked. Times are epoch milliseconds.
 */
export interface BudgetInfo {
  key: string;
  /** Visits holding the key in `exec` now (concurrency leases). */
  inUse: number;
  /** Most visits at once, when a limit on the key has `concurrency`. */
  concurrency?: number;
  /** Units taken in the sliding window ending now (a window of `rate.perMs`, else of the longest window asked). */
  unitsInWindow: number;
  /** At most `max` units per `perMs` ms, when a limit on the key has `rate`. */
  rate?: { max: number; perMs: number };
  /** Visits waiting for the key (their runs `throttled`), first first: their runs' ids. */
  waiting: string[];
  /** Until when the key is held back for everyone (a `RateLimitedError`), if it is. */
  heldUntil?: number;
  /** The last time a visit drew from or waited for the key. */
  usedAt: number;
}

/**
 * A queue now, as {@link Engine.queues} shows it: its tasks (steps, wakes, items) by state, and
 * the workers serving it.
 */
export interface QueueInfo {
  name: string;
  /** Tasks due, waiting for a worker slot. */
  waiting: number;
  /** Tasks waiting for a moment: a retry's backoff, a budget, a `receive` timeout (throttled ones included). */
  delayed: number;
  /** Runs whose next step on this queue waits for a budget (their status `throttled`). */
  throttled: number;
  /** Tasks a worker runs now. */
  running: number;
  /** Ids of the live workers serving the queue. */
  workers: string[];
}

/** A change to a run, for live views. */
export interface RunChange {
  runId: string;
  status: RunStatus;
  /** Committed steps. */
  steps: number;
}
