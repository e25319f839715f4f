import { Queue, type Job, type JobsOptions } from 'bullmq';
import type { RedisConnection } from './connection.js';
import type { Json } from '@queueflow/runtime';
import { taskId, type Scheduler, type StepTarget, type Task, type WakeTask } from '@queueflow/runtime/kernel';
import type { RedisKeys } from './redis-keys.js';

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
 * The kernel's {@link Scheduler} over one BullMQ queue: each task is a job under its task id
 * (`<run id>-<step>`, `…-p<park>`, `…-i<item>`), so adding the same task twice adds one job
 * (BullMQ ignores an add whose id it still holds). Ids never contain `:` (BullMQ forbids it) and
 * are never plain integers. A task's tries are the job's `attempts`; between tries it waits in
 * the delayed set, holding no worker slot.
 */
export class BullmqScheduler implements Scheduler {
  readonly queue: Queue;

  /**
   * @param options.client - true for an engine client: its queue does not write BullMQ's queue
   *   meta key on creation (`skipMetasUpdate`), so a client that only reads (status, list, wait)
   *   writes nothing; adding a job writes what BullMQ needs.
   * @param options.skipVersionCheck - true when this Redis user may not run INFO, which BullMQ's
   *   version check runs (BullMQ then assumes its minimum version).
   */
  constructor(
    connection: RedisConnection,
    keys: RedisKeys,
    onError: (error: Error) => void,
    options: { client?: boolean; skipVersionCheck?: boolean } = {},
  ) {
    this.queue = new Queue(keys.stepQueue, {
      connection,
      prefix: keys.prefix,
      skipMetasUpdate: options.client ?? false,
      skipVersionCheck: options.skipVersionCheck ?? false,
    });
    this.queue.on('error', onError);
  }

  async addStep(runId: string, step: number, target: StepTarget, retry?: number): Promise<void> {
    await this.add({ type: 'step', runId, step, ...(retry ? { retry } : {}) }, target.maxAttempts);
  }

  async addFirstSteps(runIds: readonly string[], target: StepTarget): Promise<void> {
    if (runIds.length === 0) return;
    await this.queue.addBulk(runIds.map((runId) => jobOf({ type: 'step', runId, step: 0 }, target.maxAttempts)));
  }

  async addItems(
    runId: string,
    step: number,
    items: readonly { index: number; item: Json }[],
    maxAttempts: number,
    retry?: number,
  ): Promise<void> {
    if (items.length === 0) return;
    await this.queue.addBulk(
      items.map(({ index, item }) =>
        jobOf({ type: 'item', runId, step, index, item, ...(retry ? { retry } : {}) }, maxAttempts),
      ),
    );
  }

  async addWake(wake: WakeTask, target: StepTarget, delayMs: number): Promise<void> {
    await this.add(wake, Math.max(1, target.maxAttempts - wake.attemptBase), delayMs);
  }

  async promote(wakeIds: readonly string[]): Promise<void> {
    await Promise.all(
      wakeIds.map(async (jobId) => {
        const job = await this.queue.getJob(jobId);
        if (job && (await job.isDelayed())) await job.promote().catch(() => {});
      }),
    );
  }

  async forgetFailed(taskIds: readonly string[]): Promise<void> {
    await Promise.all(
      taskIds.map(async (jobId) => {
        const job = await this.queue.getJob(jobId);
        if (job && (await job.isFailed())) await job.remove();
      }),
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }

  private async add(task: Task, attempts: number, delayMs = 0): Promise<void> {
    const { name, data, opts } = jobOf(task, attempts, delayMs);
    await this.queue.add(name, data, opts);
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
  };
}

function jobOf(task: Task, attempts: number, delayMs = 0): { name: string; data: JobData; opts: JobsOptions } {
  const { type: _type, ...data } = task;
  return {
    name: task.type === 'item' ? ITEM_JOB : STEP_JOB,
    data,
    opts: { jobId: taskId(task), ...(delayMs > 0 ? { delay: Math.round(delayMs) } : {}), ...attemptOptions(attempts) },
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
