import type { ErrorRecord } from '@queueflow/runtime';

/**
 * Thrown by the processor after it committed a failed try that will be retried: BullMQ moves the
 * job to the delayed set (no worker slot held) and the backoff strategy reads `retryDelayMs`.
 */
export class RetryStep extends Error {
  constructor(
    readonly record: ErrorRecord,
    /** Delay before the next try, in milliseconds (from the node's `wait` and backoff). */
    readonly retryDelayMs: number,
  ) {
    super(record.message);
    this.name = 'RetryStep';
  }
}

/** Default delay, in ms, before retrying a job that failed outside node code (infrastructure). */
const INFRASTRUCTURE_RETRY_DELAY_MS = 1000;

/** The worker's BullMQ `backoffStrategy` for jobs with backoff type `queueflow`. */
export function stepBackoff(_attemptsMade: number, _type?: string, error?: Error): number {
  return error instanceof RetryStep ? error.retryDelayMs : INFRASTRUCTURE_RETRY_DELAY_MS;
}
