/**
 * ReminderTimer: fires at the earliest due time, sooner when an earlier reminder is set, again at
 * once when one is set during a firing, and after a failure retries a second later, reporting
 * only the first failure of a streak. On a hand-driven clock: no sleeps.
 */
import { describe, expect, it } from 'vitest';
import type { Clock } from '../src/index.js';
import { ReminderTimer } from '../src/agent/reminder-timer.js';

/** A clock whose timers fire when the test moves time on. */
class HandClock implements Clock {
  time = 1_000_000;
  private id = 0;
  readonly timers = new Map<number, { at: number; callback: () => void }>();
  now(): number {
    return this.time;
  }
  setTimeout(callback: () => void, delayMs: number): unknown {
    this.timers.set(++this.id, { at: this.time + delayMs, callback });
    return this.id;
  }
  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  /** When the armed timer fires, or undefined. */
  next(): number | undefined {
    const ats = [...this.timers.values()].map((timer) => timer.at);
    return ats.length === 0 ? undefined : Math.min(...ats);
  }
  /** Moves time to `at` and fires what falls due. */
  async to(at: number): Promise<void> {
    this.time = at;
    for (const [id, timer] of [...this.timers]) {
      if (timer.at > at) continue;
      this.timers.delete(id);
      timer.callback();
    }
    for (let i = 0; i < 5; i++) await Promise.resolve(); // let the firing settle
  }
}

describe('ReminderTimer', () => {
  it('arms for the earliest due time the store reports, and sooner when an earlier one is set', async () => {
    const clock = new HandClock();
    const firings: number[] = [];
    let due: number | undefined = clock.time + 5000;
    const timer = new ReminderTimer(
      async () => (firings.push(clock.time), due),
      clock,
      Infinity,
      () => {},
    );
    timer.start();
    await clock.to(clock.time);
    expect(firings).toEqual([1_000_000]);
    expect(clock.next()).toBe(1_005_000);
    timer.set(1_002_000);
    expect(clock.next()).toBe(1_002_000);
    timer.set(1_003_000); // later than the armed one: nothing changes
    expect(clock.next()).toBe(1_002_000);
    due = undefined;
    await clock.to(1_002_000);
    expect(firings).toEqual([1_000_000, 1_002_000]);
    expect(clock.next()).toBeUndefined(); // nothing left, no polling
    await timer.close();
  });

  it('fires again at once when a reminder is set during a firing', async () => {
    const clock = new HandClock();
    let release!: () => void;
    let firings = 0;
    const timer = new ReminderTimer(
      () => {
        firings++;
        return firings === 1
          ? new Promise<undefined>((resolve) => (release = () => resolve(undefined)))
          : Promise.resolve(undefined);
      },
      clock,
      Infinity,
      () => {},
    );
    timer.start();
    await clock.to(clock.time);
    timer.set(clock.time); // due now, while the first firing reads the store
    await clock.to(clock.time);
    expect(firings).toBe(1);
    release();
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(clock.next()).toBe(clock.time);
    await clock.to(clock.time);
    expect(firings).toBe(2);
    await timer.close();
  });

  it('retries a second after a failure and reports only the first of a streak', async () => {
    const clock = new HandClock();
    const reported: unknown[] = [];
    let failing = true;
    const timer = new ReminderTimer(
      async () => {
        if (failing) throw new Error('Redis is down');
        return undefined;
      },
      clock,
      100,
      (error) => reported.push(error),
    );
    timer.start();
    await clock.to(clock.time);
    expect(clock.next()).toBe(clock.time + 1000);
    await clock.to(clock.time + 1000);
    await clock.to(clock.time + 1000);
    expect(reported).toHaveLength(1);
    failing = false;
    await clock.to(clock.time + 1000);
    expect(clock.next()).toBe(clock.time + 100); // polling again
    failing = true;
    await clock.to(clock.time + 100);
    expect(reported).toHaveLength(2); // a new streak
    await timer.close();
  });
});
