import { QueueflowError } from '../errors/queueflow-error.js';

/** The lowest priority a run may have (BullMQ's `PRIORITY_LIMIT`, 2^21 - 1). */
export const MAX_PRIORITY = 2 ** 21 - 1;

/**
 * Checks a run's `priority` as BullMQ checks a job's: an integer from 1 (runs first) to
 * {@link MAX_PRIORITY}. BullMQ also takes 0, meaning no priority: here that is leaving it out.
 *
 * @returns the priority, or `undefined` when none was given.
 * @throws QueueflowError `INVALID_OPTION` naming the option and the value received.
 */
export function checkPriority(priority: unknown, option = 'priority'): number | undefined {
  if (priority === undefined) return undefined;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < 1 || priority > MAX_PRIORITY) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `expected \`${option}\` to be an integer from 1 (runs first) to ${MAX_PRIORITY} (BullMQ's range), got ${typeof priority === 'number' ? priority : `${JSON.stringify(priority) ?? typeof priority} (${typeof priority})`}`,
      { retryable: false },
    );
  }
  return priority;
}
