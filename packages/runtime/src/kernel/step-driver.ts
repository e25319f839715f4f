import type { Json, JsonObject } from '../json/json.js';
import type { ReminderChange } from '../agent/reminders.js';
import type { SharedMemoryStore } from '../agent/shared-memory.js';
import type { ConversationStore } from '../agent/conversation-store.js';
import type { TurnStart, TurnStarted } from '../agent/agent-store.js';
import { corruptRunError, recordOfFailedTask, runErrorOf, toErrorRecord } from '../errors/error-record.js';
import type { RunError } from './engine.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import { warn } from '../core/warnings.js';
import type { Checkpoint } from '../interpreter/checkpoint.js';
import { isFlowName, type FlowRegistry } from '../interpreter/flow-definition.js';
import type { CompiledGraph } from '../interpreter/graph.js';
import { resumeFanOut } from '../interpreter/fan-out.js';
import { executeStep } from '../interpreter/step-interpreter.js';
import type { ChildOutcome, ParkRequest, StepContext, StepOutcome, StepTarget } from '../interpreter/step-types.js';
import { TrySpan, recordRunEnd } from '../telemetry/tracing.js';
import type { MergeConflict } from '../json/merge-patches.js';
import { StepMailbox, type InboxBound } from '../mailbox/step-mailbox.js';
import { BudgetGate, BudgetLeases } from './budget-gate.js';
import { CheckpointCache } from './checkpoint-cache.js';
import type { Clock } from './clock.js';
import { decodeCheckpoint, encodeCheckpoint } from './codec.js';
import { FanOutDriver, type ChildStart, type ChildTaker } from './fan-out-driver.js';
import { DEFAULT_LARGE_VALUE_BYTES, type ClaimCheck } from './claim-check.js';
import { LargeValues } from './large-values.js';
import { stepRecord } from './step-history.js';
import { StepStream } from './step-stream.js';
import {
  isFinal,
  type CommitFields,
  type CommitReply,
  type CommitMode,
  type CommitResult,
  type LoadedRun,
  type RunStore,
  type Runnable,
  type StalledTask,
  type StoredRun,
  type TurnEndCommit,
} from './run-store.js';
import type { BudgetHold } from './budget-store.js';
import {
  taskId,
  taskOptionsOf,
  type Scheduler,
  type StepTask,
  type Task,
  type TaskResult,
  type WakeTask,
} from './scheduler.js';
import { queueOf } from './run-info.js';
import { StepChain, stepTaskOf, wakeTaskOf } from './step-chain.js';
import { ChainTurnTaker, type TurnTaker } from './turn-taker.js';

export interface StepDriverOptions {
  /** Time source for records, deadlines and delays. */
  clock: Clock;
  /** Largest encoded checkpoint, in bytes. */
  maxCheckpointBytes: number;
  /** How long a refused step (other code deployed) waits before another try, in ms. */
  refusalDelayMs: number;
  /**
   * Longest a parked run sleeps before it looks at its mailbox again, in ms: a safety net for a
   * wake lost in a crash between a message's delivery and its wake (`Infinity`: none).
   */
  parkRecheckMs: number;
  /** Who commits, for step records (`StepRecord.worker`). */
  workerId?: string;
  /**
   * Values in `shared` whose JSON is over this many bytes are stored once, apart, and referenced
   * (the claim check, claim-check.ts); `Infinity`: none. @defaultValue 262144 (256 KiB)
   */
  largeValueBytes?: number;
  /**
   * Steps of a run this driver may run straight after a task's own step, in the same task,
   * before it hands the run back to the scheduler: a run's next step on the same queue starts
   * here at once, with no task of its own (no BullMQ job per step; Temporal's sticky execution
   * does the same for a workflow's next workflow task). A chain also ends after
   * {@link CONTINUE_SLICE_MS}, so that other runs' tasks (a higher priority among them) get the
   * slot. `0` or `undefined`: every step is a task of its own (LocalEngine: its in-process queue
   * costs nothing).
   */
  continueSteps?: number;
  /**
   * How long a concurrency lease of a node's `limits` lasts unless renewed ({@link
   * StepDriver.renewBudget}), in ms; `undefined`: until given back (one process).
   */
  budgetLeaseMs?: number;
  /**
   * Told when a try takes concurrency leases (flow control), before its `exec` runs: a worker's
   * beat names its leases at once (see {@link StepDriver.budgetHolds}), so whoever takes it over
   * can give them back.
   */
  onBudgetLeases?: () => void;
  /** Keyed agents (agent-runtime.ts): told of turns' ends and of messages this driver delivered. */
  agents?: TurnHooks;
  /** Where steps' shared memory lives (`this.memory`); without it, steps have none. */
  memories?: SharedMemoryStore;
  /**
   * Where the messages a step receives are recorded in their conversations (any run's step, on
   * any worker, whether or not it serves agent types); without it, none is.
   */
  conversations?: ConversationStore;
}

/** What the step driver tells keyed agents (AgentRuntime implements it). */
export interface TurnHooks {
  /**
   * A run ended (`run.status` final). A completed turn's final `shared` comes with it when the
   * driver has it, else it is read from the run.
   */
  runEnded(run: StoredRun, shared?: JsonObject, taker?: TurnTaker): Promise<void>;
  /**
   * The end of turn run `run`, whose last step is about to commit as `status` (final `shared` when
   * completed), for the store to commit with the step ({@link CommitFields.turnEnd});
   * `undefined` when the turn must end after the commit ({@link TurnHooks.runEnded}). The next
   * turn's run it may make is for `taker` when it claims it.
   */
  turnEnd(
    run: StoredRun,
    status: 'completed' | 'failed',
    shared?: JsonObject,
    error?: RunError,
    taker?: TurnTaker,
  ): Promise<TurnEndCommit | undefined>;
  /**
   * The store ended a turn with its run's last step, as `turnEnd` asked ({@link CommitReply.turnEnded}):
   * the next turn it started begins, run by `taker` when it claims it.
   */
  turnEndCommitted(
    turnEnd: TurnEndCommit,
    ended: NonNullable<CommitReply['turnEnded']>,
    taker?: TurnTaker,
  ): Promise<void>;
  /**
   * Messages reached these addresses in a transition this driver made (a commit or a park); a
   * `taker` runs one turn they start, in the slot the transition freed.
   */
  delivered(addresses: string[], taker?: TurnTaker): Promise<void>;
  /**
   * The turns of idle agents among `addresses` that the transition delivering to them may start
   * itself ({@link CommitFields.starts}); one of them is run by `taker` when it claims it.
   */
  turnStarts(addresses: string[], taker?: TurnTaker): TurnStart[];
  /**
   * A transition delivered to `addresses`, given `starts`, and answered `started`: the turns it
   * started begin (run by `taker` when it claims one), and those of the other addresses start as
   * {@link TurnHooks.delivered} starts them.
   */
  deliveredWith(
    addresses: string[],
    starts: TurnStart[] | undefined,
    started: TurnStarted[] | undefined,
    taker?: TurnTaker,
  ): Promise<void>;
  /**
   * A transition given a turn end or starts that a chain could take answered stale or threw: an
   * earlier send of it whose answer was lost may have made turn runs taken by this worker (at
   * `now`, epoch ms), which no chain runs. Those get their first steps' tasks.
   */
  madeRunsLost(turnEnd: TurnEndCommit | undefined, starts: TurnStart[] | undefined, now: number): Promise<void>;
  /** The addresses a body published on `topic` goes to (this process's agent types). */
  subscribers(topic: string, body: Json): string[];
  /** A turn's step set or cancelled reminders of its agent (`this.remind`), about to commit. */
  changeReminders(ref: string, changes: ReminderChange[]): Promise<void>;
  /** A turn of agent `ref` spent `amount` of `key` in conversation `id` (`this.spend`; see AgentRuntime.spend). */
  spend(id: string, ref: string, key: string, amount: number): Promise<void>;
  /** The bound of the inbox at `address`, when bounded (see AgentRuntime.inboxBound). */
  inboxBound(address: string): Promise<InboxBound | undefined>;
}

/** What a step's record needs beside its outcome. */
interface StepStart {
  run: StoredRun;
  attempt: number;
  /** Epoch ms when the step's first try began. */
  startedAt: number;
  /** A fan-in: the children merged and the conflicts. */
  merged?: { children: number; conflicts: MergeConflict[] };
  /** The chain of steps the task runs, when the driver continues runs (see StepDriverOptions.continueSteps). */
  chain?: StepChain;
}

/**
 * What a step ended with: a task result, its run's next step to run at once in the same task,
 * or (a taken wake) a run this worker cannot run, to give back to the scheduler.
 */
type StepResult = TaskResult | Continue | { type: 'not-here' };

interface Continue {
  type: 'continue';
  /** The step counter after the commit: the step to run next. */
  step: number;
  target: StepTarget;
  priority?: number | undefined;
}

const DONE: TaskResult = { type: 'done' };

/** How the scheduler handed a task out, when not for the first time ({@link StepDriver.run}). */
export interface TaskDelivery {
  /**
   * The scheduler handed the task out before (a retry, a deferral, or a takeover): its run is
   * read from the store, never from this driver's memory of a step it committed, so that the
   * store's note of a takeover ({@link RunStore.noteTakeover}) is read, and logged, with it.
   */
  again?: boolean;
  /** The task came back from a worker that lost it without a word: a takeover to log. */
  stalled?: StalledTask;
}

/**
 * Longest a task runs a chain of steps of its run (ms; see StepDriverOptions.continueSteps): the
 * slot then goes back to the scheduler, which may have a task of higher priority waiting.
 */
const CONTINUE_SLICE_MS = 1000;

/**
 * A try that comes this early or less before its retry wait ends runs (ms): clocks measured
 * against the Redis server's agree to a few ms, and a deferral costs a round through the delayed set.
 */
const RETRY_EARLY_TOLERANCE_MS = 50;

/**
 * The step driver (DESIGN "The run kernel"): takes one task of a run, with the step interpreter,
 * and turns its outcome into the store's atomic transitions and the scheduler's next tasks. It is
 * the one place where the rules of the run lifecycle are written; every engine runs its runs
 * through it, over its own {@link RunStore} and {@link Scheduler}.
 *
 * Every path is idempotent: a task that finds its run past its step re-adds whatever the run
 * needs next ({@link StepDriver.ensureProgress}), which recovers from a crash between a commit
 * and the add that follows it.
 */
export class StepDriver {
  /**
   * Abort controllers of the steps running here, by run id (a cancel aborts them), each with the
   * run's retry count (StoredRun.retries) as its step loaded it. A run may have two at once: its
   * next step begun before this one's end, or a retry's step begun while a cancelled one winds down.
   */
  private readonly running = new Map<string, Map<AbortController, number>>();
  /**
   * The runs this driver advanced last: their next step starts from memory, not a read. It
   * counts the cancels seen (`abort`): a run read before the latest one is read again.
   */
  private readonly runs = new CheckpointCache();
  private readonly fanOut: FanOutDriver;
  /** Puts stored forms back together from the values stored apart, and sets large values apart. */
  private readonly values: LargeValues;
  /** The flows this driver runs, with their graph fingerprints. */
  private readonly runnable: Runnable[];
  /** Runs whose refused step has been warned about (a refused step comes back every few seconds). */
  private readonly refusalsWarned = new Set<string>();
  /** Concurrency leases of the tries running here (flow control). */
  private readonly budgetLeases: BudgetLeases;
  /** Set when the worker stops: chains end at their next step (the steps in flight finish). */
  private draining = false;
  /** Who commits: StepDriverOptions.workerId, replaced when a fenced worker rejoins ({@link rejoin}). */
  private workerId: string | undefined;

  constructor(
    private readonly store: RunStore,
    private readonly scheduler: Scheduler,
    private readonly registry: FlowRegistry,
    private readonly options: StepDriverOptions,
  ) {
    this.workerId = options.workerId;
    this.budgetLeases = new BudgetLeases(options.onBudgetLeases);
    this.runnable = registry.names().map((name) => [name, registry.graph(name).fingerprint] as const);
    this.values = new LargeValues(store, options.largeValueBytes ?? DEFAULT_LARGE_VALUE_BYTES);
    this.fanOut = new FanOutDriver(store, scheduler, options, this, this.values, this.runs);
  }

  /**
   * Runs one task. `attemptsMade` is the scheduler's count of earlier tries of this task (BullMQ's
   * `attemptsMade`). Never throws for what node code does; a store or scheduler error propagates
   * (the scheduler retries the task). `delivery`: the task was handed out before.
   */
  async run(task: Task, attemptsMade: number, signal?: AbortSignal, delivery?: TaskDelivery): Promise<TaskResult> {
    if (task.type === 'item') return this.fanOut.runItem(task, attemptsMade);
    const chain = this.options.continueSteps
      ? new StepChain(this.options.continueSteps, this.options.clock.now() + CONTINUE_SLICE_MS, signal)
      : undefined;
    try {
      const result = await this.runChain(task, attemptsMade, chain, false, signal, delivery);
      if (chain) await this.runTaken(chain);
      return result.type === 'not-here' || result.type === 'continue' ? DONE : result;
    } finally {
      if (chain) await this.settle(chain);
    }
  }

  /**
   * What a chain leaves when its task ends: should a step have thrown (a store or scheduler
   * error) after others took wakes or children, those are handed to the scheduler now rather than
   * wait in this worker's taken set for its stop. The children it took and ran (or gave back)
   * leave the taken set in one call, not awaited: should it be lost, a survivor finds them ended
   * (or on their way).
   */
  private async settle(chain: StepChain): Promise<void> {
    try {
      if (chain.taken.length > 0) await this.giveBack(chain.taken.splice(0));
      if (chain.children.length > 0) await this.addChildren(chain, chain.children.splice(0));
    } catch {
      // Left in the taken set: a survivor, or this worker's stop, makes them due.
    }
    if (chain.childrenDone.length > 0) void this.store.releaseTaken(this.workerId!, chain.childrenDone).catch(() => {});
  }

  /**
   * Stops continuing runs (see StepDriverOptions.continueSteps): a worker that closes finishes
   * the steps in flight and hands each run's next step to the scheduler.
   */
  stopContinuing(): void {
    this.draining = true;
  }

  /**
   * Runs a task's step, then its run's next steps while the chain goes on. `taken`: the task is a
   * wake this chain took (direct hand-off): it has no task of its own in the scheduler.
   */
  private async runChain(
    task: StepTask | WakeTask,
    attemptsMade: number,
    chain: StepChain | undefined,
    taken = false,
    signal?: AbortSignal,
    delivery?: TaskDelivery,
  ): Promise<StepResult> {
    let result = await this.runStep(task, attemptsMade, chain, taken, signal, delivery);
    if (taken && (result.type === 'retry' || result.type === 'defer'))
      return this.handBack(stepTaskOf(task.runId, task.step), chain!, result);
    while (result.type === 'continue') {
      // A run the step woke and took goes first: it was waiting for this step's message (an
      // answer), and its own next message often comes back here, to be found by this run's next
      // step without a park. Should this worker die meanwhile, this run's next step is recovered
      // as below: by the task's job, or (a taken run) by its wake, made due by the takeover, which
      // finds the run past its step.
      if (chain!.taken.length > 0) await this.runTakenWakes(chain!);
      // The run's next step, here and now. Should this worker die during it, the task's job
      // comes back, finds the run past its step and adds the step's own task (ensureProgress).
      const at: Continue = result;
      const current = stepTaskOf(task.runId, at.step);
      chain!.steps++;
      try {
        result = await this.runStep(current, 0, chain, false, signal);
      } catch (error) {
        // A store or scheduler error (Redis failing over, say): the step gets a task of its own,
        // whose tries and failure are the step's (this task's would not name it). Should that
        // add fail too, the error goes to this task's scheduler, and taskFailed still finds the run.
        await this.scheduler.addStep(current.runId, current.step, at.target, taskOptionsOf(at)).catch(() => {
          throw error;
        });
        return DONE;
      }
      if (result.type === 'retry' || result.type === 'defer') return this.handBack(current, chain!, result);
    }
    return result;
  }

  /**
   * Runs what this chain's steps took, while the chain goes on: the parked runs they woke, then
   * the fan-out children they started; each may take more.
   */
  private async runTaken(chain: StepChain): Promise<void> {
    while (chain.taken.length > 0 || chain.children.length > 0) {
      if (chain.taken.length > 0) await this.runTakenWakes(chain);
      else await this.runTakenChild(chain, chain.children.shift()!);
    }
  }

  /**
   * Runs the first step of a fan-out child this chain started (and its next steps), in the slot
   * of the sibling whose end started it: no task, no scheduler round. One the chain cannot run
   * gets its task. Should this worker die meanwhile, the child (made, running, with no task) is
   * among its taken tasks, and the survivor that takes it over starts it ({@link recoverTaken}).
   */
  private async runTakenChild(chain: StepChain, child: ChildStart): Promise<void> {
    const { children } = chain;
    if (!this.goesOn(chain)) return this.addChildren(chain, [child, ...children.splice(0)]);
    chain.steps++;
    const task = stepTaskOf(child.runId, 0);
    let result: StepResult;
    try {
      result = await this.runChain(task, 0, chain, true, chain.signal);
    } catch (error) {
      await this.addChildren(chain, [child, ...chain.children.splice(0)]);
      throw error;
    }
    // Not run here, or its try may have been dropped (the chain's lock lost, its worker fenced:
    // runStep's result is DONE then): its first step gets its task, which finds the run where
    // it stands. Released as run, a taken run whose try was dropped would have no task at all.
    if (result.type === 'not-here' || chain.signal?.aborted) await this.addChildren(chain, [child]);
    else chain.childrenDone.push(taskId(task));
  }

  /** Adds the first step's task of children taken and not run. */
  private async addChildren(chain: StepChain, children: ChildStart[]): Promise<void> {
    for (const child of children) {
      await this.scheduler.addStep(child.runId, 0, child.target, taskOptionsOf({ priority: child.priority }));
      chain.childrenDone.push(taskId(stepTaskOf(child.runId, 0)));
    }
  }

  /**
   * Makes due the tasks a worker took to run itself and did not release (RunStore.claimTaken): a
   * dead worker's, or this one's as it stops. A wake is promoted; a fan-out child's first step
   * gets its task (as its run stands: it may have moved on, or ended).
   */
  async recoverTaken(taskIds: readonly string[]): Promise<void> {
    const wakes = taskIds.filter((id) => wakeTaskOf(id) !== undefined);
    await this.scheduler.promote(wakes);
    for (const id of taskIds) {
      if (wakeTaskOf(id) !== undefined) continue;
      const run = await this.store.load(id.replace(/-0$/, '')); // `<child id>-0`, its first step's task id
      if (run) await this.ensureProgress(run);
    }
  }

  /**
   * Runs the parked runs this chain's steps woke and took (direct hand-off: no promote, no
   * scheduler round, the woken step's messages loaded with its run), while the chain goes on; the
   * others are given back to the scheduler. A taken wake stays among this worker's taken wakes
   * until it has run, so that a survivor makes it due should this worker die meanwhile.
   */
  private async runTakenWakes(chain: StepChain): Promise<void> {
    for (let wake = chain.taken.shift(); wake !== undefined; wake = chain.taken.shift()) {
      const task = wakeTaskOf(wake);
      if (!task || !this.goesOn(chain)) {
        await this.giveBack([wake, ...chain.taken.splice(0)]);
        return;
      }
      chain.steps++;
      let result: StepResult;
      try {
        result = await this.runChain(task, 0, chain, true, chain.signal);
      } catch (error) {
        await this.giveBack([wake, ...chain.taken.splice(0)]);
        throw error;
      }
      // Not run here, or its try may have been dropped (see runTakenChild): the wake goes to
      // the scheduler, and finds the run where it stands (moved on, or still at its step).
      if (result.type === 'not-here' || chain.signal?.aborted) {
        await this.giveBack([wake]);
        continue;
      }
      // Its wake task (delayed to the park's deadline) is not needed any more. Neither call is
      // awaited: should either be lost, the wake finds its run moved on, and a takeover too.
      void this.store.releaseTaken(this.workerId!, [wake]).catch(() => {});
      void this.scheduler.dropWakes([wake], chain.queue!).catch(() => {});
    }
  }

  /** Makes taken wakes due in the scheduler after all, and releases them. */
  private async giveBack(wakeIds: string[]): Promise<void> {
    await this.scheduler.promote(wakeIds);
    await this.store.releaseTaken(this.workerId!, wakeIds);
  }

  /**
   * A step run in a chain (after the previous one, or a taken wake) wants another try, or to wait
   * (a budget): its tries and delay cannot be those of the task that began the chain, so the step
   * gets a task of its own, with the tries it has used and the delay.
   */
  private async handBack(
    task: StepTask,
    chain: StepChain,
    result: Extract<TaskResult, { type: 'retry' | 'defer' }>,
  ): Promise<TaskResult> {
    const { target, priority, attempt } = chain.last!;
    await this.scheduler.addStep(task.runId, task.step, target, {
      ...taskOptionsOf({ priority }),
      delayMs: result.delayMs,
      attemptBase: attempt + (result.type === 'retry' ? 1 : 0),
    });
    // A wake of a budget's waiter that came while the step ran missed the task: due now.
    if (result.type === 'defer' && result.woken && (await result.woken())) await this.scheduler.promote([taskId(task)]);
    return DONE;
  }

  /** Whether this driver runs `run`'s flow with the run's graph (fingerprint). */
  private runsHere(run: StoredRun): boolean {
    return this.runnable.some(([flow, fingerprint]) => flow === run.flow && fingerprint === run.fingerprint);
  }

  /** Whether `chain` may run one more step: within its limits, and the worker not stopping. */
  private goesOn(chain: StepChain | undefined): chain is StepChain {
    return chain !== undefined && !this.draining && chain.mayGoOn(this.options.clock.now());
  }

  /** Whether steps that commit in `chain` take a run they wake (direct hand-off). */
  private takes(chain: StepChain | undefined): chain is StepChain {
    return this.workerId !== undefined && this.goesOn(chain);
  }

  /** Whether the step of `run` that now commits goes on to `next` in the same task. */
  private continues(chain: StepChain | undefined, run: StoredRun, next: StepTarget): boolean {
    return this.goesOn(chain) && queueOf(next) === queueOf(run.target);
  }

  /**
   * Extends the concurrency leases of the tries running here by `budgetLeaseMs` (a worker's
   * heartbeat calls it): a worker that dies stops renewing, and its leases expire.
   */
  async renewBudget(): Promise<void> {
    const leases = this.budgetLeases.all();
    if (leases.length > 0 && this.options.budgetLeaseMs !== undefined)
      await this.store.renewBudget(leases, this.options.budgetLeaseMs);
  }

  /** The flow control of one task (its try's admission against the node's `limits`). */
  budgetGate(task: Task, runId?: string): BudgetGate {
    return new BudgetGate(this.store, this.scheduler, {
      waiter: taskId(task),
      runId,
      leaseMs: this.options.budgetLeaseMs,
      leases: this.budgetLeases,
    });
  }

  /**
   * Aborts the `exec` of a run's steps running here (its run was cancelled). `retries`: the run's
   * retry count when it was cancelled (RunEventListener.cancelled); the steps of a later retry are
   * left alone. A cancel event can come after `engine.retry` reopened the run and its step began
   * here: stopped, that step would commit nothing and leave the run with no task.
   */
  abort(runId: string, retries?: number): void {
    // A step not begun yet reads the run again, and finds it cancelled: it runs nothing. So does
    // one whose run a transition read before this cancel (CheckpointCache.remember,
    // StepChain.takenRunOf): its reply may come after this.
    this.runs.cancelled(runId);
    for (const [controller, loadedAt] of this.running.get(runId) ?? []) {
      if (retries === undefined || loadedAt <= retries)
        controller.abort(new QueueflowError('RUN_CANCELLED', `run '${runId}' was cancelled`));
    }
  }

  /**
   * Aborts the steps running here whose run has been cancelled, read from the store: for when
   * cancel events may have been lost (the event feed's `resync`, after its subscription was down).
   */
  async abortCancelled(): Promise<void> {
    // Any run may have been cancelled meanwhile: nothing read before is trusted (cached
    // checkpoints, runs in replies on their way, taken wakes' runs: StepChain.takenRunOf).
    this.runs.clear();
    const ids = [...this.running.keys()];
    if (ids.length === 0) return;
    const runs = await this.store.summaries(ids);
    runs.forEach((run, i) => {
      if (run?.status === 'cancelled') this.abort(ids[i]!);
    });
  }

  /** Aborts every step running here (the engine closes). */
  abortAll(reason: Error): void {
    for (const steps of this.running.values()) for (const controller of steps.keys()) controller.abort(reason);
  }

  /**
   * Fences this driver: its worker was declared dead while it lived (paused, starved), so others
   * run its steps now. Every step running here stops and drops its result (QueueflowError
   * `WORKER_FENCED`), chains end, and nothing remembered of a run is trusted any more. Returns
   * how many steps it stopped, once their budget leases are given back. Its commits that still
   * come would be refused by the step counter.
   */
  async fence(reason: string): Promise<number> {
    const stopped = [...this.running.values()].reduce((count, steps) => count + steps.size, 0);
    this.abortAll(new QueueflowError('WORKER_FENCED', reason));
    this.runs.clear();
    // Its concurrency slots go back now: the steps that held them are others' (an `exec` that
    // ignores its signal runs on, but no longer counts against its budget).
    const holds = this.budgetLeases.takeAll();
    if (holds.length > 0) await this.scheduler.promote((await this.store.releaseBudget(holds)).wakes);
    return stopped;
  }

  /** The concurrency leases of the tries running here (a worker's heartbeat names them). */
  budgetHolds(): BudgetHold[] {
    return this.budgetLeases.all();
  }

  /** Commits from now on under `workerId` (a fenced worker rejoins under a new id). */
  rejoin(workerId: string): void {
    this.workerId = workerId;
  }

  /**
   * A task failed for good outside the interpreter (it stalled too often, or kept failing on an
   * infrastructure error): record that on the run, as an ordinary failure, so nothing waits forever.
   */
  async taskFailed(task: Task, error: Error, attemptsMade: number): Promise<void> {
    const record = recordOfFailedTask(task, error, attemptsMade, this.options.clock.now());
    const run = await this.store.load(task.runId);
    if (!run) return;
    if (isFinal(run.status)) {
      // An ended child whose end may not have reached its parent: where they live apart, the end
      // is applied after the child's commit, by the task of its last step (RunStore.commit).
      const last = task.type === 'step' && task.step >= run.step - 1;
      return run.parent && last ? this.ensureProgress(run) : undefined;
    }
    // Past the task's step: the task ran its run's steps on (continueSteps) and failed in a later
    // one, or another task moved the run on. Whatever the run needs next is added again.
    if (task.type !== 'item' && run.step > task.step) return this.ensureProgress(run);
    if (run.step !== task.step) return;
    if (task.type === 'item')
      return this.fanOut.itemEnded(run.id, run.step, task.index, { status: 'failed', error: record });
    await this.commit(run, 'failed', { errorRecords: [record], runError: runErrorOf(record), now: record.at! });
  }

  private async runStep(
    task: StepTask | WakeTask,
    attemptsMade: number,
    chain?: StepChain,
    taken = false,
    signal?: AbortSignal,
    delivery?: TaskDelivery,
  ): Promise<StepResult> {
    // The task's lock was lost or its worker fenced before the step began: another worker runs it.
    if (signal?.aborted) return DONE;
    // A wake reads the run (it follows a park, which no cache of this driver saw), unless the
    // transition that took it read it for it. So does a task handed out again: this driver may
    // remember the step it committed before another worker took the task and lost it, and the
    // store may have noted that takeover.
    const remembered =
      task.type === 'step'
        ? this.runs.take(task.runId, task.step)
        : taken
          ? chain?.takenRunOf(task, this.runs.cancelsSeen)
          : undefined;
    const cached = delivery?.again || delivery?.stalled ? undefined : remembered;
    const loaded: LoadedRun | undefined =
      cached ??
      (await this.store.loadForStep(
        task.runId,
        this.runnable,
        task.type === 'wake' ? task.park : undefined,
        this.workerId,
        delivery?.stalled,
      ));
    if (!loaded) return DONE; // expired or never started
    // A woken step's reserved messages came with its run; they belong to this step alone.
    const { reserved, ...run } = loaded;
    if (chain) {
      chain.queue ??= queueOf(run.target);
      // A taken wake of a run this worker does not run (another queue, other code): given back.
      if (taken && (queueOf(run.target) !== chain.queue || !this.runsHere(run))) return { type: 'not-here' };
    }
    const parked = run.status === 'waiting' && run.replay.parked !== undefined;
    if (task.type === 'wake' && task.park > run.parkCount && task.step === run.step && !isFinal(run.status)) {
      // The wake is added before its park commits (see park): one due at once (its deadline has
      // passed) may come first. It waits a moment rather than being dropped.
      return {
        type: 'defer',
        delayMs: 100,
        reason: `wake ${task.park} of run '${run.id}' came before its park committed`,
      };
    }
    if (task.type === 'wake' && task.park !== run.parkCount) {
      // A wake of an earlier park: the run has parked again or moved on since.
      if (isFinal(run.status)) await this.ensureProgress(run);
      return DONE;
    }
    if (parked && task.type === 'step') {
      await this.ensureProgress(run); // it waits for its wake
      return DONE;
    }
    if (!isFinal(run.status) && task.step > run.step) {
      // A task is added only after its step was committed; should one still arrive first, it
      // waits a moment rather than being dropped.
      return {
        type: 'defer',
        delayMs: 100,
        reason: `step ${task.step} of run '${run.id}' arrived before step ${run.step} was committed`,
      };
    }
    if (isFinal(run.status) || run.step !== task.step) {
      await this.ensureProgress(run);
      return DONE;
    }
    const earlyMs = (run.retryAt ?? 0) - this.options.clock.now();
    if (task.type === 'step' && earlyMs > RETRY_EARLY_TOLERANCE_MS) {
      // The scheduler's delay ran on the clock of the worker that let the try go (BullMQ's
      // delayed jobs), which can be ahead of the one that set the wait: the wait is kept on
      // this driver's clock (the Redis server's, on RedisEngine) and the rest of it deferred.
      return {
        type: 'defer',
        delayMs: earlyMs,
        reason: `try ${run.attempt + 1} of step ${run.step} of run '${run.id}' came ${earlyMs} ms before its retry wait ended`,
      };
    }
    // A flow name no flow can have (a module path, say) was not written by queueflow: no worker
    // will ever take the step, and a refusal would send it round for ever.
    if (!isFlowName(run.flow)) {
      const problem = `its record names flow '${run.flow}', which is no flow name (letters, digits, _ . or -)`;
      return this.failCorrupt(run, corruptRunError({ id: run.id, flow: run.flow }, problem));
    }
    const graph = await this.graphFor(run);
    if (typeof graph === 'string') return { type: 'defer', delayMs: this.options.refusalDelayMs, reason: graph };
    let checkpoint: Checkpoint;
    try {
      checkpoint = await this.checkpointOf(run);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'CORRUPT_RUN') throw error;
      return this.failCorrupt(run, error);
    }
    const controller = new AbortController();
    const steps = this.running.get(run.id) ?? new Map<AbortController, number>();
    this.running.set(run.id, steps.set(controller, run.retries ?? 0));
    // A lost lock or a fenced worker stops the step's `exec`; its result is dropped (lostHere).
    const onLost = (): void => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onLost, { once: true });
    try {
      let fanIn: { total: number; outcomes: (ChildOutcome | undefined)[] } | undefined;
      if (run.status === 'waiting' && !parked) {
        const fanOut = await this.store.fanOutOf(run.id);
        if (!fanOut || fanOut.ended < fanOut.total) {
          // Not every child has ended: make sure those started are on their way (a retried
          // parent's children come back here).
          if (fanOut) await this.fanOut.ensureChildren(run);
          return DONE;
        }
        const outcomes = await this.store.outcomesOf(run.id, fanOut.total);
        fanIn = { total: fanOut.total, outcomes: await this.values.inflateOutcomes(outcomes) };
      }
      // A taken wake has no task: its tries before the park are the run's.
      const attempt = (taken ? run.attempt : (task.attemptBase ?? 0)) + attemptsMade;
      if (chain) chain.last = { target: run.target, priority: run.priority, attempt };
      const now = (): number => this.options.clock.now();
      const span = new TrySpan({
        runId: run.id,
        flow: run.flow,
        node: run.target.node ?? run.flow,
        step: run.step,
        attempt,
        parent: await this.traceOf(run),
        agent: run.turn?.agent,
        conversation: run.turn?.message.conversation,
      });
      const trace = span.trace;
      const reservations = {
        reserve: async (ordinal: number, address: string) => {
          const message = reserved?.get(ordinal) ?? (await this.store.reserveMessage(run, ordinal, address));
          if (message === 'stale')
            throw new Error(`run '${run.id}' is no longer at step ${run.step}: this run of the step is stale`);
          span.linkTo(message?.trace); // from the step that sent it
          return message;
        },
        reserveAny: async (ordinal: number, addresses: readonly string[]) => {
          // One address: a receive's reservation (the woken step's may be held already).
          if (addresses.length === 1) {
            const message = await reservations.reserve(ordinal, addresses[0]!);
            return message && { address: addresses[0]!, message };
          }
          const received = await this.store.reserveAnyMessage(run, ordinal, addresses);
          if (received === 'stale')
            throw new Error(`run '${run.id}' is no longer at step ${run.step}: this run of the step is stale`);
          span.linkTo(received?.message.trace);
          return received;
        },
      };
      // A try of this step wrote entries and ended with no transition (its worker died, or lost
      // the step): this one restarts it, and its stream says so at once (StreamEntry.restart).
      const writer = run.streamWriter;
      const restart = writer !== undefined && writer.step === run.step && !writer.ended;
      const stream = new StepStream(
        this.store,
        run.id,
        {
          step: run.step,
          attempt,
          node: run.target.node ?? run.flow,
          ...(this.workerId === undefined ? {} : { worker: this.workerId }),
          restart,
        },
        now,
      );
      // A taken wake that finds no budget is handed back as its step's task (handBack), and its
      // wake is dropped: the budget's waiter is that task, so that a release promotes it.
      const gate = this.budgetGate(taken ? stepTaskOf(task.runId, task.step) : task, run.id);
      const ctx: StepContext = {
        attempt,
        signal: controller.signal,
        run: {
          runId: run.id,
          flow: run.flow,
          step: run.step,
          ...(run.turn ? { message: run.turn.message, agent: run.turn.agent } : {}),
        },
        mailbox: new StepMailbox(reservations, { runId: run.id, step: run.step, attempt, trace }, run.replay, now, {
          turn: run.turn ? { agent: run.turn.agent, number: run.turn.turn, message: run.turn.message } : undefined,
          subscribers: (topic, body) => this.options.agents?.subscribers(topic, body) ?? [],
          spend: spenderOf(run, this.options.agents),
          inbox: this.options.agents ? (address) => this.options.agents!.inboxBound(address) : undefined,
          memories: this.options.memories,
          received: this.options.conversations
            ? (id, receipt) => this.options.conversations!.received(id, { ...receipt, runId: run.id, now: now() })
            : undefined,
        }),
        emitter: stream,
        now,
        budget: gate,
      };
      // A step retried after a failed try began with its first try (StepRecord.startedAt).
      const start: StepStart = { run, attempt, startedAt: run.stepStartedAt ?? now(), ...(chain ? { chain } : {}) };
      let ended: StepOutcome | undefined;
      try {
        let conflicts: MergeConflict[] = [];
        if (fanIn) {
          const resumed = await span.run(() => resumeFanOut(graph, checkpoint, fanIn.outcomes, ctx));
          ended = resumed.outcome;
          if (lostHere(controller)) {
            stream.drop();
            return DONE;
          }
          await stream.flush();
          if (cancelledHere(controller)) return await this.droppedByCancel(run);
          start.merged = { children: fanIn.total, conflicts: resumed.conflicts };
          conflicts = resumed.conflicts;
        } else {
          // A step this worker may no longer commit is let go at once, even while its `exec`
          // ignores the signal: its job is finished here and its lock no longer renewed.
          const outcome = await Promise.race([
            span.run(() => executeStep(graph, checkpoint, ctx)),
            untilLost(controller),
          ]);
          if (outcome === LOST || lostHere(controller)) {
            stream.drop(); // a try given up says nothing more (its `exec` may run on, ignoring the signal)
            return DONE;
          }
          ended = outcome;
          // The step's entries are stored before its outcome: a follower sees them before the end.
          await stream.flush();
          if (cancelledHere(controller)) return await this.droppedByCancel(run);
        }
        const result = await this.apply(start, graph, ended, conflicts, trace);
        return result.type === 'defer' && ended.type === 'throttled'
          ? { ...result, woken: () => gate.woken() }
          : result;
      } finally {
        span.end(
          ended?.type ?? 'failed',
          ended?.type === 'failed' || ended?.type === 'retry' ? ended.error : undefined,
        );
      }
    } finally {
      signal?.removeEventListener('abort', onLost);
      // The run's next step may have started here already (its task is added with this commit):
      // its controller stays.
      steps.delete(controller);
      if (steps.size === 0 && this.running.get(run.id) === steps) this.running.delete(run.id);
    }
  }

  /** Fails a run whose record no step can resume from (CORRUPT_RUN) now: no retry can mend it. */
  private async failCorrupt(run: StoredRun, error: unknown): Promise<TaskResult> {
    const record = toErrorRecord(error, { at: this.options.clock.now() });
    await this.commit(run, 'failed', { errorRecords: [record], runError: runErrorOf(record), now: record.at! });
    return DONE;
  }

  /** The trace context a run's spans join: its own, or (a fan-out child) its parent's fan-out step's. */
  private async traceOf(run: StoredRun): Promise<string | undefined> {
    if (run.trace !== undefined || !run.parent) return run.trace;
    return this.fanOut.traceOf(run.parent.id, run.parent.step);
  }

  /**
   * A step whose `exec` a cancel aborted commits nothing, whatever its code did after the abort:
   * the run stopped at this step boundary. Its commit would not be refused should a retry have
   * reopened the run meanwhile (same step), and would then land on the retried run, e.g. failing
   * it with the abort's error; the retry's own task runs the step again instead. A cancelled
   * fan-out child still tells its parent (ensureProgress of an ended run).
   */
  private async droppedByCancel(run: StoredRun): Promise<TaskResult> {
    const current = await this.store.load(run.id);
    if (current && isFinal(current.status)) await this.ensureProgress(current);
    return DONE;
  }

  /** The run's checkpoint; a fan-out child's is a delta against its parent's snapshot. */
  async checkpointOf(run: StoredRun): Promise<Checkpoint> {
    const snapshot = run.parent ? await this.fanOut.snapshotOf(run.parent.id, run.parent.step) : undefined;
    return decodeCheckpoint(await this.values.inflateOf(run.checkpoint, run), () => snapshot, run);
  }

  /** Commits a step's outcome and adds what follows it. */
  private async apply(
    start: StepStart,
    graph: CompiledGraph,
    outcome: StepOutcome,
    conflicts: CommitFields['conflicts'] = [],
    trace?: string,
  ): Promise<StepResult> {
    const { run } = start;
    const now = this.options.clock.now();
    if (outcome.type === 'failed') {
      const errorRecords = outcome.errors.includes(outcome.error) ? outcome.errors : [...outcome.errors, outcome.error];
      await this.commit(run, 'failed', { errorRecords, runError: runErrorOf(outcome.error), now }, start.chain);
      return DONE;
    }
    if (outcome.type === 'park') {
      await this.park(run, outcome, start.chain);
      return DONE;
    }
    let checkpoint: string;
    let record: string | undefined;
    const claim = this.values.check();
    try {
      const snapshot = run.parent ? await this.fanOut.snapshotOf(run.parent.id, run.parent.step) : undefined;
      checkpoint = encodeCheckpoint(outcome.checkpoint, this.options.maxCheckpointBytes, snapshot, claim);
      if (outcome.type !== 'retry' && outcome.type !== 'throttled')
        record = await this.recordOf(start, outcome, now, claim);
    } catch (error) {
      const record = toErrorRecord(error, { retryable: false, node: outcome.checkpoint.frames.at(-1)?.node, at: now });
      await this.commit(
        run,
        'failed',
        {
          errorRecords: [...outcome.errors, record],
          runError: runErrorOf(record),
          now,
        },
        start.chain,
      );
      return DONE;
    }
    // Before the commit: should it not happen, the step runs again and sets them again (by name).
    if (outcome.reminders?.length && run.turn)
      await this.options.agents?.changeReminders(run.turn.agent, outcome.reminders);
    switch (outcome.type) {
      case 'next': {
        // The next step's task is added together with the commit (one round trip, not two), and
        // after it on the same connection, so the store has the commit before the task. Should
        // the commit be refused, the task is harmless: it finds the run elsewhere (ensureProgress).
        const fields = {
          checkpoint,
          target: outcome.target,
          conflicts,
          errorRecords: outcome.errors,
          outbox: outcome.outbox,
          now,
          ...(record === undefined ? {} : { record }),
          ...optional('values', await this.values.claimOf(claim, run.checkpoint)),
        };
        const continues = this.continues(start.chain, run, outcome.target);
        // Remembered before the next task exists, so that task finds it; forgotten if refused
        // (and by a cancel that comes meanwhile: remembered before the commit is sent).
        // As the commit does, it drops what belonged to this step's tries (its first try's start,
        // its retry wait, a refusal): the next step would otherwise take them for its own.
        const {
          stepStartedAt: _started,
          retryAt: _retryAt,
          refusal: _refusal,
          streamWriter: _writer,
          ...committed
        } = run;
        this.runs.remember(
          {
            ...committed,
            status: 'running',
            step: run.step + 1,
            attempt: 0,
            target: outcome.target,
            checkpoint,
            replay: { sent: 0 },
          },
          this.runs.cancelsSeen,
        );
        const [result] = await Promise.all([
          this.commit(run, 'next', fields, start.chain),
          continues ? undefined : this.scheduler.addStep(run.id, run.step + 1, outcome.target, taskOptionsOf(run)),
        ]);
        if (result !== 'committed') this.runs.forget(run.id);
        else if (continues)
          return { type: 'continue', step: run.step + 1, target: outcome.target, priority: run.priority };
        return DONE;
      }
      case 'retry': {
        const result = await this.commit(
          run,
          'retry',
          {
            checkpoint,
            errorRecords: outcome.errors,
            stepStartedAt: start.startedAt,
            retryAt: now + outcome.delayMs,
            now,
            ...optional('values', await this.values.claimOf(claim, run.checkpoint)),
          },
          start.chain,
        );
        return result === 'committed' ? { type: 'retry', delayMs: outcome.delayMs, error: outcome.error } : DONE;
      }
      case 'throttled': {
        // No budget (or a RateLimitedError): the visit keeps its prep result and waits in the
        // scheduler's delayed set, holding no slot and using no try, until its budget allows it.
        const result = await this.commit(
          run,
          'throttled',
          {
            checkpoint,
            throttledBy: outcome.key,
            errorRecords: outcome.errors,
            stepStartedAt: start.startedAt,
            now,
          },
          start.chain,
        );
        if (result !== 'committed') return DONE;
        const reason = `run '${run.id}' waits ${Math.round(outcome.delayMs)} ms for budget '${outcome.key}'`;
        return { type: 'defer', delayMs: outcome.delayMs, reason };
      }
      case 'completed':
        await this.commit(
          run,
          'completed',
          {
            checkpoint,
            conflicts,
            errorRecords: outcome.errors,
            outbox: outcome.outbox,
            now,
            ...(record === undefined ? {} : { record }),
            ...(outcome.lastAction === undefined ? {} : { lastAction: outcome.lastAction }),
            ...optional('values', await this.values.claimOf(claim, run.checkpoint)),
          },
          start.chain,
          outcome.checkpoint.shared,
        );
        return DONE;
      case 'fan-out':
        await this.fanOut.start(
          run,
          graph,
          outcome.checkpoint,
          checkpoint,
          {
            ...outcome.fanOut,
            ...(trace === undefined ? {} : { trace }),
            ...(run.priority === undefined ? {} : { priority: run.priority }),
          },
          outcome.outbox,
          record,
          claim,
        );
        return DONE;
    }
  }

  /** The history record of the step `start` began, which ends with `outcome`. */
  private async recordOf(start: StepStart, outcome: StepOutcome, now: number, claim: ClaimCheck): Promise<string> {
    const before = await this.checkpointOf(start.run);
    const node =
      outcome.visited?.node ??
      (outcome.type === 'fan-out'
        ? outcome.fanOut.kind === 'runs'
          ? outcome.fanOut.flow
          : outcome.fanOut.node
        : (start.run.target.node ?? before.frames.at(-1)?.flow ?? ''));
    return stepRecord(
      {
        step: start.run.step,
        node,
        action: outcome.visited?.action,
        tries: start.attempt + 1,
        startedAt: start.startedAt,
        endedAt: now,
        worker: this.workerId,
        ...(outcome.type === 'fan-out' ? { fannedOut: true } : {}),
        ...(start.merged ? { merged: start.merged } : {}),
      },
      before,
      outcome.checkpoint,
      claim,
    );
  }

  /** Parks the run on a mailbox and adds its wake. */
  private async park(
    run: StoredRun,
    outcome: Extract<StepOutcome, { type: 'park' }>,
    chain: StepChain | undefined,
  ): Promise<void> {
    // The wake exists before the park commits, delayed to the receive's deadline (or the
    // re-check): a message that comes at any moment after the park finds a wake to promote. Should
    // the park be refused, the wake finds the run elsewhere and does nothing.
    const wake: WakeTask = {
      type: 'wake',
      runId: run.id,
      step: run.step,
      park: run.parkCount + 1,
      attemptBase: run.attempt,
    };
    await this.addWake(wake, run, outcome.park);
    const takes = this.takes(chain);
    // The run leaves the slot: a turn its sends start (the agent it asks) may run there next.
    const taker = takes ? this.turnTaker(chain) : undefined;
    const addresses = outcome.outbox.map((sent) => sent.address);
    const starts = addresses.length ? this.options.agents?.turnStarts(addresses, taker) : undefined;
    // Before the park reads the taken run: a cancel seen after it may be newer.
    const cancelsSeen = this.runs.cancelsSeen;
    const reply = await this.lostRunsChecked(undefined, starts, this.options.clock.now(), () =>
      this.store.park(run, outcome.park, outcome.replay, outcome.outbox, takes ? this.workerId : undefined, starts),
    );
    if (takes && reply.taken !== undefined) chain.take(reply.taken, reply.takenRun, cancelsSeen);
    await this.scheduler.promote(reply.wakes);
    if (reply.result === 'stale') {
      const current = await this.store.load(run.id);
      if (current) await this.ensureProgress(current);
      return;
    }
    if (reply.result !== 'committed') return;
    if (addresses.length) await this.options.agents?.deliveredWith(addresses, starts, reply.started, taker);
    // A message was there already (it came while the step ran): wake now.
    if (reply.ready) await this.scheduler.promote([taskId(wake)]);
  }

  /** The wake of a park: due at its deadline (or the re-check), now when `park` is undefined. */
  private addWake(wake: WakeTask, run: StoredRun, park?: ParkRequest): Promise<void> {
    const untilDeadline =
      park?.deadline === null || park === undefined ? Infinity : park.deadline - this.options.clock.now();
    const delayMs = park === undefined ? 0 : Math.min(untilDeadline, this.options.parkRecheckMs);
    return this.scheduler.addWake(wake, run.target, delayMs, taskOptionsOf(run));
  }

  /**
   * Commits, and does what follows a refused or cancelling commit. A fan-out child that ends
   * here reports to its parent with the commit (RunStore.commit).
   */
  private async commit(
    run: StoredRun,
    mode: CommitMode,
    fields: CommitFields,
    chain?: StepChain,
    shared?: JsonObject,
  ): Promise<CommitResult> {
    const takes = this.takes(chain);
    // Before the commit reads or makes the runs its reply brings: a cancel seen after it may be newer.
    const cancelsSeen = this.runs.cancelsSeen;
    // The next child a child's end starts runs in this one's slot: taken, when it runs on this
    // chain's queue (its record is made by the commit, recorded among this worker's taken tasks).
    const taker: ChildTaker | undefined = takes
      ? {
          cancelsSeen,
          runs: (target) => queueOf(target) === chain.queue,
          take: (child) => chain.children.push(child),
        }
      : undefined;
    const report = run.parent ? await this.fanOut.childReport(run, mode, fields, taker) : undefined;
    // One turn runs next in this chain, in the slot of the run that ends here (as a fan-out
    // child's next sibling does): no task, no scheduler round. The key's own next turn first, else
    // one that the run's sends start. A run that goes on keeps the slot: its sends' turns get tasks.
    const ends = mode === 'completed' || mode === 'failed';
    const turnTaker = takes && ends && this.options.agents ? this.turnTaker(chain) : undefined;
    // A turn's end commits with its run's last step when the store can (one transition).
    const turnEnd =
      run.turn && ends ? await this.options.agents?.turnEnd(run, mode, shared, fields.runError, turnTaker) : undefined;
    // Idle agents its sends reach start their turns in the same transition when the store can.
    const addresses = mode === 'next' || mode === 'completed' ? (fields.outbox ?? []).map((sent) => sent.address) : [];
    // (A turn whose end follows the commit claims the chain for its own next turn first.)
    const startTaker = run.turn && ends && !turnEnd ? undefined : turnTaker;
    const starts = addresses.length ? this.options.agents?.turnStarts(addresses, startTaker) : undefined;
    const reply = await this.lostRunsChecked(turnEnd, starts, fields.now, () =>
      this.store.commit(
        run,
        mode,
        {
          ...fields,
          ...(takes ? { takenBy: this.workerId! } : {}),
          ...(turnEnd ? { turnEnd } : {}),
          ...(starts?.length ? { starts } : {}),
        },
        report,
      ),
    );
    if (takes && reply.taken !== undefined) chain.take(reply.taken, reply.takenRun, cancelsSeen);
    if (reply.result === 'committed' && (mode === 'completed' || mode === 'failed')) {
      recordRunEnd({ ...run, trace: await this.traceOf(run) }, mode, fields.now, fields.runError);
    }
    await this.scheduler.promote(reply.wakes);
    if (reply.result === 'committed')
      await this.toAgents(
        run,
        mode,
        fields,
        shared,
        turnTaker,
        turnEnd && reply.turnEnded && { turnEnd, ended: reply.turnEnded },
        starts && { starts, started: reply.started },
      );
    if (reply.result === 'stale') {
      const current = await this.store.load(run.id);
      if (current) await this.ensureProgress(current);
    }
    if (reply.parent && report)
      await this.fanOut.followChildEnded(report.parent.id, report.parent.step, reply.parent, taker);
    return reply.result;
  }

  /**
   * Runs `transition` (a commit or a park given `turnEnd` and `starts`); when it answers stale or
   * throws, the turn runs an earlier send of it may have made taken by this worker get tasks
   * (TurnHooks.madeRunsLost).
   */
  private async lostRunsChecked<R extends { result: CommitResult }>(
    turnEnd: TurnEndCommit | undefined,
    starts: TurnStart[] | undefined,
    now: number,
    transition: () => Promise<R>,
  ): Promise<R> {
    const takes = turnEnd?.end.nextRun?.takenBy !== undefined || starts?.some((start) => start.run?.takenBy);
    let reply: R;
    try {
      reply = await transition();
    } catch (error) {
      if (takes) await this.options.agents?.madeRunsLost(turnEnd, starts, now).catch(() => {});
      throw error;
    }
    if (takes && reply.result !== 'committed') await this.options.agents?.madeRunsLost(turnEnd, starts, now);
    return reply;
  }

  /**
   * Tells keyed agents what a committed transition did: a turn that ended (`turnEnded`: with the
   * commit), messages to agents.
   */
  private async toAgents(
    run: StoredRun,
    mode: CommitMode,
    fields: CommitFields,
    shared?: JsonObject,
    taker?: TurnTaker,
    turnEnded?: { turnEnd: TurnEndCommit; ended: NonNullable<CommitReply['turnEnded']> },
    started?: { starts: TurnStart[]; started: TurnStarted[] | undefined },
  ): Promise<void> {
    const agents = this.options.agents;
    if (!agents) return;
    const ended = mode === 'completed' || mode === 'failed';
    if (run.turn && ended && turnEnded) await agents.turnEndCommitted(turnEnded.turnEnd, turnEnded.ended, taker);
    else if (run.turn && ended)
      await agents.runEnded(
        { ...run, status: mode, ...(fields.runError ? { error: fields.runError } : {}) },
        shared,
        taker,
      );
    if ((mode === 'next' || mode === 'completed') && fields.outbox?.length)
      await agents.deliveredWith(
        fields.outbox.map((sent) => sent.address),
        started?.starts,
        started?.started,
        taker,
      );
  }

  /** Runs one agent turn next in `chain` (see TurnTaker), made taken by this worker. */
  private turnTaker(chain: StepChain): TurnTaker {
    return new ChainTurnTaker(this.workerId!, chain, this.runs);
  }

  /**
   * Re-adds whatever `run` needs next; every add is idempotent. Called when a task finds its run
   * past its step: the task that committed may have died before adding the next one.
   */
  async ensureProgress(run: StoredRun): Promise<void> {
    if (isFinal(run.status)) {
      // A turn whose end its key has not heard of (its committer died first) ends here.
      if (run.turn) await this.options.agents?.runEnded(run);
      return this.fanOut.reportEnded(run);
    }
    if (run.status !== 'waiting') return this.scheduler.addStep(run.id, run.step, run.target, taskOptionsOf(run));
    if (run.replay.parked) {
      const wake: WakeTask = {
        type: 'wake',
        runId: run.id,
        step: run.step,
        park: run.parkCount,
        attemptBase: run.attempt,
      };
      return this.addWake(wake, run, run.replay.parked);
    }
    return this.fanOut.ensureChildren(run);
  }

  /**
   * The graph for `run`, built here, or why this driver refuses the step: a graph of another
   * shape (other code deployed mid-run) or no such flow. A refused step goes back to the
   * scheduler without using up a try, so a worker with the matching code can take it.
   */
  async graphFor(run: Pick<StoredRun, 'id' | 'flow' | 'fingerprint'>): Promise<CompiledGraph | string> {
    let problem: string;
    try {
      const graph = this.registry.graph(run.flow);
      if (graph.fingerprint === run.fingerprint) return graph;
      problem = `flow '${run.flow}' has graph fingerprint ${graph.fingerprint} on this worker but ${run.fingerprint} in run '${run.id}' (other code deployed?)`;
    } catch (error) {
      problem = `this worker cannot build flow '${run.flow}' of run '${run.id}': ${(error as Error).message}`;
    }
    await this.store.noteRefusal(run.id, `${problem} (at ${new Date(this.options.clock.now()).toISOString()})`);
    if (!this.refusalsWarned.has(run.id)) {
      if (this.refusalsWarned.size >= 1000) this.refusalsWarned.clear();
      this.refusalsWarned.add(run.id);
      warn('QF_STEP_REFUSED', `${problem}; the step goes back to the queue for a worker with the matching code`);
    }
    return problem;
  }
}

/**
 * Whether the step `controller` belongs to was stopped because this worker may no longer commit
 * it: its task's lock was lost, or the worker was fenced (declared dead while it lived). Another
 * worker runs the step; this try's result is dropped, uncommitted.
 */
function lostHere(controller: AbortController): boolean {
  return (
    controller.signal.aborted && (controller.signal.reason as { code?: string } | undefined)?.code === 'WORKER_FENCED'
  );
}

const LOST = Symbol('lost');

/** Resolves once the step `controller` belongs to is lost to this worker ({@link lostHere}); never otherwise. */
function untilLost(controller: AbortController): Promise<typeof LOST> {
  return new Promise((resolve) => {
    const onAbort = (): void => {
      if (lostHere(controller)) resolve(LOST);
    };
    if (controller.signal.aborted) onAbort();
    else controller.signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Whether a cancel of the run aborted the step `controller` belongs to (not the engine closing). */
function cancelledHere(controller: AbortController): boolean {
  return (
    controller.signal.aborted && (controller.signal.reason as { code?: string } | undefined)?.code === 'RUN_CANCELLED'
  );
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** What `this.spend` counts against in a step of `run`: its turn's conversation, if any. */
function spenderOf(
  run: StoredRun,
  agents: TurnHooks | undefined,
): ((key: string, amount: number) => Promise<void>) | undefined {
  const turn = run.turn;
  const conversation = turn?.message.conversation;
  if (!agents || !turn || conversation === undefined) return undefined;
  return (key, amount) => agents.spend(conversation, turn.agent, key, amount);
}
