/**
 * The time source of an engine: real by default, replaceable in tests so that retry delays
 * elapse without sleeping (xstate's `SimulatedClock` habit).
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Calls `callback` after `delayMs` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
