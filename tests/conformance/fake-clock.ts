/**
 * A clock for LocalEngine (xstate's `SimulatedClock` habit): retry delays become timers that fire
 * only when the test moves time on, so nothing sleeps and every delay asked for can be read back.
 * With `autoAdvance`, time jumps to each timer as soon as it is set (on the next macrotask): runs
 * go on without the test's help, and the delays can still be read back.
 */
import type { Clock } from '@queueflow/runtime';

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

  constructor(private readonly options: { autoAdvance?: boolean } = {}) {}

  now(): number {
    return this.time;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + delayMs, delayMs, callback });
    this.requested.push(delayMs);
    if (this.options.autoAdvance) {
      setImmediate(() => {
        const timer = this.timers.get(id);
        if (timer) this.advance(Math.max(0, timer.at - this.time));
      });
    }
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
    const due = [...this.timers.entries()]
      .filter(([, timer]) => timer.at <= this.time)
      .sort((a, b) => a[1].at - b[1].at);
    for (const [id, timer] of due) {
      this.timers.delete(id);
      timer.callback();
    }
  }
}
