import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Json } from '@queueflow/runtime';
import type { StepTarget } from '@queueflow/runtime/interpreter';
import type { RedisKeys } from './redis-keys.js';

/** Data of a job that takes one step of a run (or the fan-in of a waiting parent). */
export interface StepJobData {
  runId: string;
  step: number;
  /** A wake job of a parked run: the park it ends (stale once the run parked again or moved on). */
  park?: number;
  /** Tries of the step that had failed before it parked: the wake job's tries count on from there. */
  attemptBase?: number;
}

/** Data of a job that runs one item of a ParallelBatchNode fan-out. */
export interface ItemJobData extends StepJobData {
  index: number;
  item: Json;
}

export const STEP_JOB = 'step';
export const ITEM_JOB = 'item';

/**
 * The name of the BullMQ backoff type whose delay the worker computes from the failed try
 * (`wait`, and the node's backoff options), through the worker's `backoffStrategy`.
 */
export const BACKOFF_TYPE = 'queueflow';

/**
 * Enqueues step jobs under deterministic ids (`<run id>-<step>`, `<run id>-<step>-i<item>`), so
 * enqueueing the same step twice adds one job: BullMQ ignores an add whose id it still holds.
 * Ids never contain `:` (BullMQ forbids it) and are never plain integers.
 */
export class StepQueue {
  readonly queue: Queue;

  /**
   * @param options.client - true for an engine client: its queue does not write BullMQ's queue
   *   meta key on creation (`skipMetasUpdate`), so a client that only reads (status, list, wait)
   *   writes nothing; adding a job writes what BullMQ needs.
   */
  constructor(connection: Redis, keys: RedisKeys, onError: (error: Error) => void, options: { client?: boolean } = {}) {
    this.queue = new Queue(keys.stepQueue, {
      connection,
      prefix: keys.prefix,
      skipMetasUpdate: options.client ?? false,
    });
    this.queue.on('error', onError);
  }

  static stepJobId(runId: string, step: number): string {
    return `${runId}-${step}`;
  }

  static itemJobId(runId: string, step: number, index: number): string {
    return `${runId}-${step}-i${index}`;
  }

  /** Enqueues step `step` of `runId`, with the target node's tries as BullMQ attempts. */
  async addStep(runId: string, step: number, target: StepTarget): Promise<void> {
    await this.queue.add(STEP_JOB, { runId, step } satisfies StepJobData, {
      jobId: StepQueue.stepJobId(runId, step),
      ...attemptOptions(target.maxAttempts),
    });
  }

  static wakeJobId(runId: string, step: number, parkCount: number): string {
    return `${runId}-${step}-p${parkCount}`;
  }

  /**
   * Enqueues the wake job of a parked run: it runs the parked step again after `delayMs` (its
   * receive deadline, or a periodic re-check), or as soon as a message promotes it.
   */
  async addWake(
    runId: string,
    step: number,
    parkCount: number,
    target: StepTarget,
    attemptBase: number,
    delayMs: number,
  ): Promise<void> {
    await this.queue.add(STEP_JOB, { runId, step, park: parkCount, attemptBase } satisfies StepJobData, {
      jobId: StepQueue.wakeJobId(runId, step, parkCount),
      delay: Math.max(0, Math.round(delayMs)),
      ...attemptOptions(Math.max(1, target.maxAttempts - attemptBase)),
    });
  }

  /** Moves the given delayed (wake) jobs to the wait list now; gone or running ones are skipped. */
  async promote(jobIds: string[]): Promise<void> {
    await Promise.all(
      jobIds.map(async (jobId) => {
        const job = await this.queue.getJob(jobId);
        if (job && (await job.isDelayed())) await job.promote().catch(() => {});
      }),
    );
  }

  /** Enqueues the items at `indices` of a ParallelBatchNode fan-out. */
  async addItems(
    runId: string,
    step: number,
    items: { index: number; item: Json }[],
    maxAttempts: number,
  ): Promise<void> {
    if (items.length === 0) return;
    await this.queue.addBulk(
      items.map(({ index, item }) => ({
        name: ITEM_JOB,
        data: { runId, step, index, item } satisfies ItemJobData,
        opts: { jobId: StepQueue.itemJobId(runId, step, index), ...attemptOptions(maxAttempts) },
      })),
    );
  }

  /** Enqueues the first step of each of `runIds` (fan-out children). */
  async addFirstSteps(runIds: string[], target: StepTarget): Promise<void> {
    if (runIds.length === 0) return;
    await this.queue.addBulk(
      runIds.map((runId) => ({
        name: STEP_JOB,
        data: { runId, step: 0 } satisfies StepJobData,
        opts: { jobId: StepQueue.stepJobId(runId, 0), ...attemptOptions(target.maxAttempts) },
      })),
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/**
 * BullMQ options shared by every step job: `attempts` = the node's `maxRetries` (BullMQ counts
 * the first try too); the delay between tries comes from the worker's backoff strategy.
 * Completed jobs are removed at once (the run record keeps the results); failed jobs are kept
 * for a week for inspection.
 */
function attemptOptions(maxAttempts: number): JobsOptions {
  return {
    attempts: maxAttempts,
    backoff: { type: BACKOFF_TYPE, delay: 0 },
    removeOnComplete: true,
    removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
  };
}
