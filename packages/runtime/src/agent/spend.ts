import { QueueflowError } from '../errors/queueflow-error.js';
import { checkWellFormed } from '../core/well-formed.js';

/** Longest spend key (`this.spend`, a budget's `cost.key`), in characters. */
const MAX_SPEND_KEY = 200;

/**
 * Checks a spend key: 1 to 200 characters, well-formed Unicode (a `limits` key, `tokens`, `usd`,
 * `openai/gpt-4o`).
 * @param owner - who checks, for errors (`spend`, `send`).
 * @param option - how to name it in errors, e.g. `key`.
 * @throws QueueflowError `INVALID_OPTION` naming the bad value.
 */
export function checkSpendKey(owner: string, option: string, key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_SPEND_KEY)
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected \`${option}\` to be 1 to ${MAX_SPEND_KEY} characters, got ${typeof key === 'string' ? JSON.stringify(key.slice(0, 80)) : String(key)}`,
      { retryable: false },
    );
  return checkWellFormed(owner, option, key);
}

/** Largest amount one `spend` reports (Number.MAX_SAFE_INTEGER): totals stay exact and finite. */
export const MAX_SPEND_AMOUNT = Number.MAX_SAFE_INTEGER;
