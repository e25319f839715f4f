import { Job, Queue, type JobsOptions } from 'bullmq';
import type { RedisConnection } from './connection.js';
import { DEFAULT_QUEUE, type Json } from '@queueflow/runtime';
import {
  queueOf,
  taskId,
  type QueueCounts,
  type Scheduler,
  type StepTarget,
  type StepTaskOptions,
  type Task,
  type TaskOptions,
  type WakeTask,
} from '@queueflow/runtime/kernel';
import { Partitions, groupBy } from './partitions.js';
import type { RedisKeys } from './redis-keys.js';
import { withScripts } from './scripts.js';

/** Job names: one per task type. */
const STEP_JOB = 'step';
const ITEM_JOB = 'item';

/**
 * The name of the BullMQ backoff type whose delay the worker computes from the failed try
 * (`wait`, and the node's backoff options), through the worker's `backoffStrategy`.
 */
const BACKOFF_TYPE = 'queueflow';

/** A task's job data: the task, minus what the job's name says. */
type JobData =
  | { runId: string; step: number; park?: number; attemptBase?: number; retry?: number }
  | { runId: string; step: number; index: number; item: Json; retry?: number };

/**
 * The kernel's {@link Scheduler} over BullMQ queues, one per queue a node names (`steps` for the
 * default queue, `steps.<name>` for the others: {@link RedisKeys.stepQueueOf}). Each task is a
 * job under its task id (`<run id>-<step>`, `…-p<park>`, `…-i<item>`), so adding the same task
 * twice adds one job (BullMQ ignores an add whose id it still holds). Ids never contain `:`
 * (BullMQ forbids it) and are never plain integers. A task's tries are the job's `attempts`;
 * between tries it waits in the delayed set, holding no worker slot; its run's priority is the
 * job's `priority`. Each partition has its own queues ({@link Partitions}): a task goes to those
 * of its partition (Partitions.indexOf: its run's, or, for an item, some places further).
 */
export class BullmqScheduler implements Scheduler {
  /** The default queue's BullMQ queue of partition 0 (schedule ticks go there). */
  readonly queue: Queue;
  /** The deployment's partitions. */
  readonly partitions: Partitions;
  /** BullMQ queues by partition and queue name (`<partition>/<name>`), opened on first use. */
  private readonly queues = new Map<string, Queue>();
  /** Queue names this process has recorded in the deployment's set of queues (RedisKeys.queues). */
  private readonly recorded = new Set<string>([DEFAULT_QUEUE]);

  /**
   * @param options.client - true for an engine client: its queue does not write BullMQ's queue
   *   meta key on creation (`skipMetasUpdate`), so a client that only reads (status, list, wait)
   *   writes nothing; adding a job writes what BullMQ needs.
   * @param options.skipVersionCheck - true when this Redis user may not run INFO, which BullMQ's
   *   version check runs (BullMQ then assumes its minimum version).
   */
  constructor(
    private readonly connection: RedisConnection,
    keys: RedisKeys | Partitions,
    private readonly onError: (error: Error) => void,
    private readonly options: { client?: boolean; skipVersionCheck?: boolean } = {},
  ) {
    this.partitions = keys instanceof Partitions ? keys : new Partitions(keys.prefix, 1);
    this.queue = this.queueOf(DEFAULT_QUEUE);
  }

  private get keys(): RedisKeys {
    return this.partitions.home;
  }

  /**
   * The BullMQ queue of queue `name` in partition `partition`, opened on first use (on this
   * scheduler's connection).
   */
  queueOf(name: string, partition = 0): Queue {
    const id = `${partition}/${name}`;
    let queue = this.queues.get(id);
    if (!queue) {
      const keys = this.partitions.all[partition]!;
      queue = new Queue(keys.stepQueueOf(name), {
        connection: this.connection,
        prefix: keys.prefix,
        skipMetasUpdate: this.options.client ?? false,
        skipVersionCheck: this.options.skipVersionCheck ?? false,
      });
      queue.on('error', this.onError);
      this.queues.set(id, queue);
    }
    return queue;
  }

  async addStep(runId: string, step: number, target: StepTarget, options: StepTaskOptions = {}): Promise<void> {
    const { retry, priority, attemptBase = 0, delayMs = 0 } = options;
    const task = {
      type: 'step',
      runId,
      step,
      ...(retry ? { retry } : {}),
      ...(attemptBase ? { attemptBase } : {}),
    } as const;
    await this.add(task, { ...target, maxAttempts: Math.max(1, target.maxAttempts - attemptBase) }, delayMs, priority);
  }

  async addFirstSteps(runIds: readonly string[], target: StepTarget, options: TaskOptions = {}): Promise<void> {
    await Promise.all(
      [...groupBy(runIds, (runId) => this.partitions.indexOf(runId))].map(async ([partition, ids]) =>
        (await this.queueFor(target, partition)).addBulk(
          ids.map((runId) => jobOf({ type: 'step', runId, step: 0 }, target.maxAttempts, 0, options.priority)),
        ),
      ),
    );
  }

  async addItems(
    runId: string,
    step: number,
    items: readonly { index: number; item: Json }[],
    target: StepTarget,
    options: TaskOptions = {},
  ): Promise<void> {
    if (items.length === 0) return;
    const { retry, priority } = options;
    // Items go round the partitions' queues (Partitions.indexOf): one bulk add per partition.
    const jobs = items.map(({ index, item }) =>
      jobOf({ type: 'item', runId, step, index, item, ...(retry ? { retry } : {}) }, target.maxAttempts, 0, priority),
    );
    await Promise.all(
      [...groupBy(jobs, (job) => this.partitions.indexOf(job.opts.jobId!))].map(async ([partition, group]) =>
        (await this.queueFor(target, partition)).addBulk(group),
      ),
    );
  }

  async addWake(wake: WakeTask, target: StepTarget, delayMs: number, options: TaskOptions = {}): Promise<void> {
    const attempts = Math.max(1, target.maxAttempts - wake.attemptBase);
    await this.add(wake, { ...target, maxAttempts: attempts }, delayMs, options.priority);
  }

  async promote(wakeIds: readonly string[]): Promise<void> {
    await Promise.all(wakeIds.map((jobId) => this.hurry(jobId)));
  }

  /**
   * Makes a delayed job due now and puts it at the front of its queue's wait list (a woken task
   * runs next, not behind every step queued meanwhile: a parked run's message, a budget's room).
   * Also called by the worker at the moment a task waiting for a budget is due, for the same
   * reason (BullMQ puts due delayed jobs at the back).
   *
   * A wake is nearly always a delayed job of the default queue: it is promoted there by id (no
   * read of the job first), then moved to the front. Only a job found in neither the default
   * queue's delayed set nor its wait list is looked for in the deployment's other queues.
   */
  async hurry(jobId: string): Promise<void> {
    const partition = this.partitions.indexOf(jobId);
    if (await this.hurryIn(this.queueOf(DEFAULT_QUEUE, partition), jobId)) return;
    for (const name of await this.queueNames()) {
      if (name !== DEFAULT_QUEUE && (await this.hurryIn(this.queueOf(name, partition), jobId))) return;
    }
  }

  /** Promote and move to the front in `queue`; false when the job is neither delayed nor waiting there. */
  private async hurryIn(queue: Queue, jobId: string): Promise<boolean> {
    const promoted = await new Job(queue, STEP_JOB, {}, {}, jobId).promote().then(
      () => true,
      () => false, // not in the delayed set: waiting, running, or gone
    );
    // After the promote (BullMQ puts it at the back of the wait list), or a due job waiting there.
    const moved = await withScripts(this.connection)
      .hurryJob(`${queue.qualifiedName}:wait`, jobId)
      .then(
        (code) => code === 1,
        () => false,
      );
    return promoted || moved;
  }

  async dropWakes(wakeIds: readonly string[], name: string): Promise<void> {
    // BullMQ removes a job that no worker holds (a delayed wake), and leaves a running one alone.
    await Promise.all(wakeIds.map((jobId) => this.queueOf(name, this.partitions.indexOf(jobId)).remove(jobId)));
  }

  async forgetFailed(taskIds: readonly string[]): Promise<void> {
    await Promise.all(
      taskIds.map(async (jobId) => {
        const job = await this.findJob(jobId);
        if (job && (await job.isFailed())) await job.remove();
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
  }

  /** Tasks by state in every queue of the deployment, over its partitions (BullMQ's job counts). */
  async queueCounts(): Promise<QueueCounts[]> {
    const names = await this.queueNames();
    return Promise.all(
      names.map(async (name) => {
        const counts = await Promise.all(
          this.partitions.all.map((_, partition) =>
            this.queueOf(name, partition).getJobCounts('waiting', 'prioritized', 'delayed', 'active'),
          ),
        );
        const sum = (state: string): number => counts.reduce((total, count) => total + (count[state] ?? 0), 0);
        return {
          queue: name,
          waiting: sum('waiting') + sum('prioritized'),
          delayed: sum('delayed'),
          running: sum('active'),
        };
      }),
    );
  }

  /** The names of every queue tasks were added to in this deployment, the default one first. */
  async queueNames(): Promise<string[]> {
    const others = await this.connection.smembers(this.keys.queues());
    for (const name of others) this.recorded.add(name);
    return [DEFAULT_QUEUE, ...others.filter((name) => name !== DEFAULT_QUEUE).sort()];
  }

  /**
   * The job `jobId` wherever it is: a wake or a task is named by its id alone, and lives in the
   * queue of its step's node. The default queue is looked at first, then the others this
   * deployment has used.
   */
  private async findJob(jobId: string): Promise<Job | undefined> {
    const partition = this.partitions.indexOf(jobId);
    const found = await this.queueOf(DEFAULT_QUEUE, partition).getJob(jobId);
    if (found) return found;
    for (const name of await this.queueNames()) {
      if (name === DEFAULT_QUEUE) continue;
      const job = await this.queueOf(name, partition).getJob(jobId);
      if (job) return job;
    }
    return undefined;
  }

  /**
   * The BullMQ queue of `target`'s queue in `partition`; the first add to a queue other than the default one
   * records its name in the deployment's set of queues (so that wakes can be found there).
   */
  private async queueFor(target: StepTarget, partition: number): Promise<Queue> {
    const name = queueOf(target);
    if (!this.recorded.has(name)) {
      await this.connection.sadd(this.keys.queues(), name);
      this.recorded.add(name);
    }
    return this.queueOf(name, partition);
  }

  private async add(task: Task, target: StepTarget, delayMs: number, priority: number | undefined): Promise<void> {
    const queue = await this.queueFor(target, this.partitions.indexOf(taskId(task)));
    const { name, data, opts } = jobOf(task, target.maxAttempts, delayMs, priority);
    await queue.add(name, data, opts);
  }
}

/** The task a job carries. */
export function taskOfJob(job: Job): Task {
  const data = job.data as JobData;
  if (job.name === ITEM_JOB && 'index' in data) return { type: 'item', ...data };
  if ('park' in data && data.park !== undefined) {
    return { type: 'wake', runId: data.runId, step: data.step, park: data.park, attemptBase: data.attemptBase ?? 0 };
  }
  return {
    type: 'step',
    runId: data.runId,
    step: data.step,
    ...('retry' in data && data.retry ? { retry: data.retry } : {}),
    ...('attemptBase' in data && data.attemptBase ? { attemptBase: data.attemptBase } : {}),
  };
}

function jobOf(
  task: Task,
  attempts: number,
  delayMs: number,
  priority: number | undefined,
): { name: string; data: JobData; opts: JobsOptions } {
  const { type: _type, ...data } = task;
  return {
    name: task.type === 'item' ? ITEM_JOB : STEP_JOB,
    data,
    opts: {
      jobId: taskId(task),
      ...(delayMs > 0 ? { delay: Math.round(delayMs) } : {}),
      ...(priority === undefined ? {} : { priority }),
      ...attemptOptions(attempts),
    },
  };
}

/**
 * BullMQ options shared by every job: `attempts` = the node's `maxRetries` (BullMQ counts the
 * first try too); the delay between tries comes from the worker's backoff strategy. Completed
 * jobs are removed at once (the run record keeps the results); failed jobs are kept for a week
 * for inspection.
 */
function attemptOptions(attempts: number): JobsOptions {
  return {
    attempts,
    backoff: { type: BACKOFF_TYPE, delay: 0 },
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
  };
}
