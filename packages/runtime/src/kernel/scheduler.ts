import type { ErrorRecord } from '../errors/error-record.js';
import type { Json } from '../json/json.js';
import type { StepTarget } from '../interpreter/step-types.js';

/**
 * The scheduling contract of the run kernel (DESIGN "The run kernel"): who runs a step, and when.
 * BullMQ on Redis (one job per task, retries as job attempts, delays in the delayed set), an
 * in-process queue on the injected clock in LocalEngine.
 *
 * Every add is idempotent: a task is named by a deterministic id, and adding an id the scheduler
 * still holds (waiting, delayed or running) adds nothing. So whoever finds a run short of its
 * next task may add it again (the step driver's `ensureProgress`).
 */
/** A queue's tasks by state, as a scheduler counts them ({@link Scheduler.queueCounts}). */
export interface QueueCounts {
  queue: string;
  waiting: number;
  delayed: number;
  running: number;
}

export interface Scheduler {
  /** Tasks by state in each queue tasks were added to (for `Engine.queues`). */
  queueCounts?(): Promise<QueueCounts[]>;
  /**
   * Adds step `step` of `runId`, with `target.maxAttempts` tries, on `target.queue`;
   * `options.retry` for the task of the run's `retry`th retry (see {@link StepTask.retry}).
   * With `options.attemptBase`, the step has used that many tries already (the task gets the rest);
   * with `options.delayMs`, it is due that many ms from now.
   */
  addStep(runId: string, step: number, target: StepTarget, options?: StepTaskOptions): Promise<void>;
  /** Adds the first step of each fan-out child run in `runIds`. */
  addFirstSteps(runIds: readonly string[], target: StepTarget, options?: TaskOptions): Promise<void>;
  /**
   * Adds the item tasks of a ParallelBatchNode fan-out, each with `target.maxAttempts` tries, on
   * `target.queue` (the node's); `options.retry` for those of the parent's `retry`th retry.
   */
  addItems(
    runId: string,
    step: number,
    items: readonly { index: number; item: Json }[],
    target: StepTarget,
    options?: TaskOptions,
  ): Promise<void>;
  /**
   * Adds the wake of a parked run: it runs the parked step again after `delayMs` (its receive
   * deadline, or a periodic re-check), or as soon as {@link Scheduler.promote} names it. Its
   * tries count on from `attemptBase` (the tries the step had used before it parked).
   */
  addWake(wake: WakeTask, target: StepTarget, delayMs: number, options?: TaskOptions): Promise<void>;
  /** Makes the named delayed wakes due now; gone or running ones are skipped. */
  promote(wakeIds: readonly string[]): Promise<void>;
  /**
   * Removes delayed wakes no run needs any more (their park ended without them: a worker took the
   * woken run and ran its step itself), from queue `queue` (a node's `queue`); gone or running
   * ones are skipped. A wake left would only find its run moved on when due, at the cost of a task.
   */
  dropWakes(wakeIds: readonly string[], queue: string): Promise<void>;
  /**
   * Forgets the tasks with these ids that failed for good (BullMQ keeps failed jobs, and an add
   * under a kept id adds nothing), so that a retried run's tasks can be added again.
   */
  forgetFailed(taskIds: readonly string[]): Promise<void>;
}

/** How a task is added beside its target. */
export interface TaskOptions {
  /** The task of the run's `retry`th retry (see {@link StepTask.retry}). */
  retry?: number | undefined;
  /**
   * The run's priority (BullMQ's meaning: 1 runs first, higher numbers later; a task without one
   * runs before every task with one). Among tasks of one priority, the first added runs first.
   */
  priority?: number | undefined;
}

/** How a step's task is added beside {@link TaskOptions}. */
export interface StepTaskOptions extends TaskOptions {
  /** Tries of the step used before this task (see {@link StepTask.attemptBase}). @defaultValue 0 */
  attemptBase?: number | undefined;
  /** How long the task waits before it is due, in ms. @defaultValue 0 (due now) */
  delayMs?: number | undefined;
}

/** The options of the tasks of `run`: its priority (and a retry's count, when given). */
export function taskOptionsOf(run: { priority?: number | undefined }, retry?: number): TaskOptions {
  return {
    ...(run.priority === undefined ? {} : { priority: run.priority }),
    ...(retry ? { retry } : {}),
  };
}

/** A task: one step of a run (its wake, after a park, included), or one item of a fan-out. */
export type Task = StepTask | WakeTask | ItemTask;

export interface StepTask {
  type: 'step';
  runId: string;
  step: number;
  /**
   * Added by the run's `retry`th retry (engine.retry): a task id of its own, so that a task of
   * the same step still held from before the retry (a failed try not yet acknowledged, a
   * cancelled step winding down) cannot swallow the add.
   */
  retry?: number;
  /**
   * Tries of the step used before this task: a step a worker ran straight after the previous
   * one in the same task (the step driver's continuation), handed to the scheduler after a
   * failed try, counts its tries on from there.
   */
  attemptBase?: number;
}

export interface WakeTask {
  type: 'wake';
  runId: string;
  step: number;
  /** The park it ends: stale once the run has parked again or moved on. */
  park: number;
  /** Tries of the step that had failed before it parked. */
  attemptBase: number;
}

export interface ItemTask {
  type: 'item';
  runId: string;
  step: number;
  index: number;
  item: Json;
  /** Added by the parent's `retry`th retry: see {@link StepTask.retry}. */
  retry?: number;
}

/**
 * What became of a task, for its scheduler:
 * - `done`: nothing more to do with it;
 * - `retry`: a failed try that will be retried: run it again after `delayMs` with the next
 *   attempt (BullMQ: the job's next attempt, through the backoff strategy);
 * - `defer`: run it again after `delayMs` without using a try (a worker with other code refused
 *   it, it arrived before the commit that precedes it, or it waits for a budget). `woken`, when
 *   set, is asked once the task is in the delayed set: true means a wake (promote) came while the
 *   task was still running, and missed it; the scheduler then makes it due now.
 */
export type TaskResult =
  | { type: 'done' }
  | { type: 'retry'; delayMs: number; error: ErrorRecord }
  | { type: 'defer'; delayMs: number; reason: string; woken?: () => Promise<boolean> };

/** The deterministic id of a task, unique among a deployment's tasks. Never holds `:` (BullMQ). */
export function taskId(task: Task): string {
  switch (task.type) {
    case 'step':
      return `${task.runId}-${task.step}${retrySuffix(task.retry)}`;
    case 'wake':
      return `${task.runId}-${task.step}-p${task.park}`;
    case 'item':
      return `${task.runId}-${task.step}-i${task.index}${retrySuffix(task.retry)}`;
  }
}

/**
 * The run a task id (see {@link taskId}) belongs to: its run's id for a step or wake, the run
 * that fanned the item out for an item.
 */
export function runIdOfTask(id: string): string {
  return id.replace(/-\d+(?:-p\d+|-i\d+)?(?:-r\d+)?$/, '');
}

function retrySuffix(retry: number | undefined): string {
  return retry ? `-r${retry}` : '';
}
