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
