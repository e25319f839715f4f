/**
 * A clock for LocalEngine tests (xstate's `SimulatedClock` habit): retry delays become timers
 * that fire only when the test moves time on, so nothing sleeps and every delay asked for can
 * be read back.
 */
import type { Clock } from '../src/index.js';

interface Timer {
  at: number;
  delayMs: number;
  callback: () => void;
}

export class FakeClock implements Clock {
  private time = Date.UTC(2025, 0, 1);
  private nextId = 1;
  private readonly timers = new Map<number, Timer>();
  /** Every delay asked for through `setTimeout`, in order. */
  readonly requested: number[] = [];

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + delayMs, delayMs, callback });
    this.requested.push(delayMs);
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Delays of the timers not fired yet. */
  pending(): number[] {
    return [...this.timers.values()].map((timer) => timer.delayMs);
  }

  /** Moves time on by `ms`, firing the timers that fall due, earliest first. */
  advance(ms: number): void {
    this.time += ms;
    const due = [...this.timers.entries()].filter(([, timer]) => timer.at <= this.time).sort((a, b) => a[1].at - b[1].at);
    for (const [id, timer] of due) {
      this.timers.delete(id);
      timer.callback();
    }
  }
}

/**
 * Polls `condition` between macrotasks until it holds (in-process engine work needs no real
 * time); gives up after `timeoutMs` real milliseconds.
 */
export async function until<T>(what: string, condition: () => T | Promise<T>, timeoutMs = 5000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}
