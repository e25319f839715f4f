/**
 * Test helpers shared by the runtime unit tests: deferred promises (to prove overlap and to
 * order concurrent work without sleeping) and a warning capture on the replaceable channel.
 */
import { afterEach, beforeEach } from 'vitest';
import { setWarningHandler, type WarningCode } from '../src/index.js';

/** Waits for a promise or fails after a deadline (shared with the Redis tests). */
export { within } from '../../../tests/support/wait-for.js';

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves after every pending microtask chain has run (one macrotask turn). */
export function flushMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export interface CapturedWarning {
  code: WarningCode;
  message: string;
}

/**
 * Routes queueflow warnings into the returned array for each test of the calling file and
 * restores the default channel afterwards.
 */
export function captureWarnings(): CapturedWarning[] {
  const warnings: CapturedWarning[] = [];
  beforeEach(() => {
    warnings.length = 0;
    setWarningHandler((code, message) => warnings.push({ code, message }));
  });
  afterEach(() => {
    setWarningHandler(null);
  });
  return warnings;
}

/**
 * A counter of concurrent work: `enter()` when an item starts, `leave()` when it ends; `max` is
 * the most items seen in flight at once.
 */
export class InFlight {
  current = 0;
  max = 0;
  enter(): void {
    this.current++;
    this.max = Math.max(this.max, this.current);
  }
  leave(): void {
    this.current--;
  }
}
