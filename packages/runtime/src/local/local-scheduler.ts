import { toErrorRecord } from '../errors/error-record.js';
import type { Json } from '../json/json.js';
import type { StepTarget } from '../interpreter/step-types.js';
import type { Clock } from '../kernel/clock.js';
import {
  taskId,
  type QueueCounts,
  type Scheduler,
  type StepTask,
  type StepTaskOptions,
  type Task,
  type TaskOptions,
  type TaskResult,
  type WakeTask,
} from '../kernel/scheduler.js';
import { ReadyQueue } from './ready-queue.js';
import { queueOf } from '../kernel/run-info.js';

/** Runs the tasks a scheduler hands out (the step driver). */
export interface TaskRunner {
  run(task: Task, attemptsMade: number): Promise<TaskResult>;
  taskFailed(task: Task, error: Error, attemptsMade: number): Promise<void>;
}

interface Job {
  task: Task;
  /** Tries the task gets (BullMQ `attempts`). */
  attempts: number;
  attemptsMade: number;
  state: 'waiting' | 'delayed' | 'active';
  /** The queue its node names (counted apart; this process serves every queue). */
  queue: string;
  timer?: unknown;
  /** The run's priority (BullMQ's: 1 first; none goes before any). */
  priority: number | undefined;
}

/** Delay before a task that threw (a bug, not node code) runs again, in ms (as on Redis). */
const FAILED_TASK_RETRY_MS = 1000;

/**
 * The LocalEngine's scheduler: BullMQ's job semantics in this process, on the injected clock.
 * Tasks are jobs named by their task id (an add whose id is still held adds nothing), at most
 * `concurrency` run at once in BullMQ's order (tasks without a priority first, in the order they
 * became ready; then by priority, 1 first; see {@link ReadyQueue}), a delayed job waits on a timer of
 * the clock without holding a slot; a `retry` uses up one of the job's attempts, a `defer` none.
 */
export class LocalScheduler implements Scheduler {
  private readonly jobs = new Map<string, Job>();
  private readonly ready = new ReadyQueue();
  /** Tasks running now. */
  active = 0;

  /** Tasks waiting for a slot now (not delayed, not running): the queue depth. */
  get waiting(): number {
    let count = 0;
    for (const job of this.jobs.values()) if (job.state === 'waiting') count++;
    return count;
  }
  private runner: TaskRunner | undefined;
  private closed = false;

  constructor(
    private readonly concurrency: number,
    private readonly clock: Clock,
  ) {}

  /** Starts handing tasks to `runner`. */
  start(runner: TaskRunner): void {
    this.runner = runner;
    this.pump();
  }

  // Queues (`target.queue`) are not told apart: this process serves every queue.
  async addStep(runId: string, step: number, target: StepTarget, options: StepTaskOptions = {}): Promise<void> {
    const { retry, priority, attemptBase = 0, delayMs = 0 } = options;
    const task: StepTask = {
      type: 'step',
      runId,
      step,
      ...(retry ? { retry } : {}),
      ...(attemptBase ? { attemptBase } : {}),
    };
    this.add(task, Math.max(1, target.maxAttempts - attemptBase), delayMs, priority, queueOf(target));
  }

  async addFirstSteps(runIds: readonly string[], target: StepTarget, options: TaskOptions = {}): Promise<void> {
    for (const runId of runIds)
      this.add({ type: 'step', runId, step: 0 }, target.maxAttempts, 0, options.priority, queueOf(target));
  }

  async addItems(
    runId: string,
    step: number,
    items: readonly { index: number; item: Json }[],
    target: StepTarget,
    options: TaskOptions = {},
  ): Promise<void> {
    const { retry, priority } = options;
    for (const { index, item } of items)
      this.add(
        { type: 'item', runId, step, index, item, ...(retry ? { retry } : {}) },
        target.maxAttempts,
        0,
        priority,
        queueOf(target),
      );
  }

  async addWake(wake: WakeTask, target: StepTarget, delayMs: number, options: TaskOptions = {}): Promise<void> {
    this.add(wake, Math.max(1, target.maxAttempts - wake.attemptBase), delayMs, options.priority, queueOf(target));
  }

  async queueCounts(): Promise<QueueCounts[]> {
    const counts = new Map<string, QueueCounts>();
    for (const job of this.jobs.values()) {
      const count = counts.get(job.queue) ?? { queue: job.queue, waiting: 0, delayed: 0, running: 0 };
      count[job.state === 'active' ? 'running' : job.state] += 1;
      counts.set(job.queue, count);
    }
    return [...counts.values()];
  }

  async promote(wakeIds: readonly string[]): Promise<void> {
    for (const id of wakeIds) {
      const job = this.jobs.get(id);
      if (job?.state === 'delayed') this.makeReady(id, job);
    }
  }

  async dropWakes(wakeIds: readonly string[], _queue: string): Promise<void> {
    for (const id of wakeIds) {
      const job = this.jobs.get(id);
      if (job?.state !== 'delayed') continue;
      if (job.timer !== undefined) this.clock.clearTimeout(job.timer);
      this.jobs.delete(id);
    }
  }

  async forgetFailed(_taskIds: readonly string[]): Promise<void> {
    // A task that fails for good is dropped at once here: nothing to forget.
  }

  /** Drops waiting and delayed tasks; tasks running finish. */
  close(): void {
    this.closed = true;
    for (const job of this.jobs.values()) if (job.timer !== undefined) this.clock.clearTimeout(job.timer);
    this.jobs.clear();
    this.ready.clear();
  }

  private add(task: Task, attempts: number, delayMs: number, priority: number | undefined, queue: string): void {
    const id = taskId(task);
    if (this.closed || this.jobs.has(id)) return;
    const job: Job = { task, attempts, attemptsMade: 0, state: 'waiting', queue, priority };
    this.jobs.set(id, job);
    this.schedule(id, job, delayMs);
  }

  private schedule(id: string, job: Job, delayMs: number): void {
    if (delayMs <= 0 || !Number.isFinite(delayMs)) {
      if (delayMs === Infinity) {
        job.state = 'delayed'; // waits for a promote
        return;
      }
      return this.makeReady(id, job);
    }
    job.state = 'delayed';
    job.timer = this.clock.setTimeout(() => this.makeReady(id, job), delayMs);
  }

  private makeReady(id: string, job: Job): void {
    if (job.timer !== undefined) this.clock.clearTimeout(job.timer);
    delete job.timer;
    job.state = 'waiting';
    this.ready.push(id, job.priority);
    this.pump();
  }

  private pump(): void {
    while (this.runner && !this.closed && this.active < this.concurrency && this.ready.size > 0) {
      const id = this.ready.shift()!;
      const job = this.jobs.get(id);
      if (job?.state !== 'waiting') continue;
      job.state = 'active';
      this.active++;
      void this.runJob(id, job, this.runner).finally(() => {
        this.active--;
        this.pump();
      });
    }
  }

  private async runJob(id: string, job: Job, runner: TaskRunner): Promise<void> {
    let result: TaskResult;
    try {
      result = await runner.run(job.task, job.attemptsMade);
    } catch (error) {
      result = { type: 'retry', delayMs: FAILED_TASK_RETRY_MS, error: toErrorRecord(error) };
      if (job.attemptsMade + 1 >= job.attempts) {
        this.jobs.delete(id);
        await runner.taskFailed(job.task, error as Error, job.attemptsMade + 1).catch(() => {});
        return;
      }
    }
    if (this.closed) return;
    if (result.type === 'done') {
      this.jobs.delete(id);
      return;
    }
    if (result.type === 'retry') job.attemptsMade++;
    this.schedule(id, job, result.delayMs);
    // A wake that came while the task ran found it active, not delayed: it would be lost.
    if (result.type === 'defer' && result.woken && (await result.woken()) && job.state === 'delayed')
      this.makeReady(id, job);
  }
}
