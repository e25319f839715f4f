import { invalidOption } from './validate-options.js';

/**
 * How long to wait between tries of `exec`.
 *
 * - `fixed` (default): `wait` seconds before every retry (PocketFlow's rule).
 * - `exponential`: `wait * 2^k` seconds before retry `k + 1` (k = 0-based index of the failed
 *   try), capped at `maxDelayMs`, less a random share of up to `jitter` of it (BullMQ's formula).
 *
 * @see https://docs.bullmq.io/guide/retrying-failing-jobs (exponential backoff with jitter)
 */
export interface BackoffOptions {
  type: 'fixed' | 'exponential';
  /** Share of each delay that is randomised away, from 0 to 1. @defaultValue 0 */
  jitter?: number;
  /** Upper bound of one delay, in milliseconds. @defaultValue no bound */
  maxDelayMs?: number;
}

export function checkBackoff(owner: string, backoff: unknown): BackoffOptions | undefined {
  if (backoff === undefined) return undefined;
  const b = backoff as Partial<BackoffOptions> | null;
  if (b === null || typeof b !== 'object' || (b.type !== 'fixed' && b.type !== 'exponential')) {
    throw invalidOption(
      owner,
      'backoff.type',
      "'fixed' or 'exponential'",
      b === null || typeof b !== 'object' ? b : b.type,
    );
  }
  if (b.jitter !== undefined && (typeof b.jitter !== 'number' || !(b.jitter >= 0 && b.jitter <= 1))) {
    throw invalidOption(owner, 'backoff.jitter', 'a number from 0 to 1', b.jitter);
  }
  if (b.maxDelayMs !== undefined && (typeof b.maxDelayMs !== 'number' || !(b.maxDelayMs >= 0))) {
    throw invalidOption(owner, 'backoff.maxDelayMs', 'a number of milliseconds from 0 and up', b.maxDelayMs);
  }
  return b as BackoffOptions;
}

/**
 * Delay in milliseconds before the try that follows failed try `failedTry` (0-based).
 *
 * @param waitSeconds - the node's `wait`, in seconds.
 * @param random - a source of numbers in [0, 1), injectable for tests.
 */
export function backoffDelayMs(
  failedTry: number,
  waitSeconds: number,
  backoff: BackoffOptions | undefined,
  random: () => number = Math.random,
): number {
  const base = waitSeconds * 1000;
  if (!backoff || backoff.type === 'fixed') return jittered(base, backoff?.jitter ?? 0, random);
  const exponential = Math.min(base * 2 ** failedTry, backoff.maxDelayMs ?? Number.POSITIVE_INFINITY);
  return jittered(exponential, backoff.jitter ?? 0, random);
}

function jittered(delayMs: number, jitter: number, random: () => number): number {
  if (jitter <= 0) return delayMs;
  return Math.round(delayMs * (1 - jitter) + delayMs * jitter * random());
}
