import { WaitingError, type Job } from 'bullmq';
import { QueueflowError } from '@queueflow/runtime';

/**
 * The jobs a worker gave up because it may no longer finish them: their lock was lost, or the
 * worker was fenced. BullMQ then reports each again (`Missing lock for job <id>` when the
 * processor returns, `could not renew lock for job <id>` meanwhile); those are not news.
 */
export class LostJobs {
  private readonly ids = new Set<string>();

  add(jobId: string): void {
    this.ids.add(jobId);
    if (this.ids.size > 10_000) this.ids.delete(this.ids.values().next().value!);
  }

  has(jobId: string): boolean {
    return this.ids.has(jobId);
  }

  /** Whether `error` is BullMQ's word on a job given up here, or on a lock lost while fenced. */
  covers(error: Error): boolean {
    const match =
      /(?:Missing (?:lock|key) for job|Lock mismatch for job|could not renew lock for job) (\S+?)\.?(?: |$)/.exec(
        error.message,
      );
    return match !== null && this.ids.has(match[1]!);
  }
}

/** The reason a step stops when its worker gives it up: its result is dropped (StepDriver `lostHere`). */
export function lostStep(reason: string): QueueflowError {
  return new QueueflowError('WORKER_FENCED', reason);
}

/**
 * Gives a job up that this worker may no longer finish (fenced, or its lock lost), so that BullMQ
 * neither completes nor fails it: throws BullMQ's `WaitingError`, which leaves the job as it is.
 * Where this worker still holds the job's lock, the job goes back to the front of its queue
 * first: a job it took after the takeover that fenced it (its main loop took jobs for a moment
 * before it heard), or a worker removed from the registry rather than claimed. Completed here,
 * such a job would leave its run waiting for a step that never committed. Where another worker
 * holds the lock now, BullMQ refuses the move (lock mismatch or missing) and that worker finishes it.
 */
export async function giveUpJob(job: Job, token: string | undefined, reason: string): Promise<never> {
  if (token !== undefined) await job.moveToWait(token).catch(() => undefined);
  throw new WaitingError(reason);
}
