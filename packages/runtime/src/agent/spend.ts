import { QueueflowError } from '../errors/queueflow-error.js';

/** Longest spend key (`this.spend`, a budget's `cost.key`), in characters. */
const MAX_SPEND_KEY = 100;

/**
 * Checks a spend key: 1 to 100 letters, digits, `_ . : -` (`tokens`, `usd`, `gpt-4o:input`).
 * @param where - how to name it in errors, e.g. "spend: `key`".
 * @throws QueueflowError `INVALID_OPTION` naming the bad value.
 */
export function checkSpendKey(where: string, key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_SPEND_KEY || !/^[\w.:-]+$/.test(key))
    throw new QueueflowError(
      'INVALID_OPTION',
      `${where}: expected 1 to ${MAX_SPEND_KEY} letters, digits or _ . : -, got ${JSON.stringify(key)}`,
      { retryable: false },
    );
  return key;
}
