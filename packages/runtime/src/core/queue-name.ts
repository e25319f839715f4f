import { invalidOption } from './validate-options.js';

/** The queue of a node that names none, and the one queue a worker serves unless told otherwise. */
export const DEFAULT_QUEUE = 'default';

/** Longest queue name, in characters. */
const MAX_QUEUE_NAME = 64;

/** Letters, digits, `_`, `-` and `.`, starting with a letter or digit: safe in every Redis key and BullMQ queue name. */
const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * Checks a queue name (a node's `queue`, a worker's `queues`): 1 to 64 letters, digits, `_`, `-`
 * or `.`, starting with a letter or digit.
 *
 * @throws TypeError naming `owner`, `option`, what was expected and what was received.
 */
export function checkQueueName(owner: string, option: string, value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_QUEUE_NAME || !QUEUE_NAME.test(value)) {
    throw invalidOption(
      owner,
      option,
      `a queue name of 1 to ${MAX_QUEUE_NAME} letters, digits, '_', '-' or '.', starting with a letter or digit`,
      value,
    );
  }
  return value;
}
