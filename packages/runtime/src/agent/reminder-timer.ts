import type { Clock } from '../kernel/clock.js';

/** How long after a failed firing (Redis unreachable) the next is tried, at least, in ms. */
const RETRY_AFTER_FAILURE_MS = 1000;

/**
 * Fires agents' reminders when they come due (README "Agents", reminders): a timer of the clock
 * armed for the earliest due time the store reported, or sooner when this process sets an earlier
 * one, and, where other processes set reminders too (Redis), at least every `pollMs`.
 * One firing at a time; a failed one (Redis down) is tried again after a second at least, and
 * only the first failure of a streak is reported.
 */
export class ReminderTimer {
  private handle: unknown;
  /** When the armed timer fires, epoch ms; `Infinity`: none armed. */
  private armedFor = Infinity;
  private firing: Promise<void> | undefined;
  /** A timer fired while a firing was under way: fire again once it ends. */
  private again = false;
  /** Failures in a row: the first is reported, the others are not (Redis down for a while). */
  private failures = 0;
  private closed = false;

  constructor(
    /** Fires what is due; resolves when the earliest reminder left is due (epoch ms). */
    private readonly fire: () => Promise<number | undefined>,
    private readonly clock: Clock,
    /** Longest wait between two firings, in ms: `Infinity` where only this process sets reminders. */
    private readonly pollMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Fires what is due now, then keeps firing. */
  start(): void {
    this.arm(this.clock.now());
  }

  /** A reminder was set, due at `due` (epoch ms). */
  set(due: number): void {
    if (due < this.armedFor) this.arm(due);
  }

  /** Stops; resolves once a firing under way has ended. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.handle !== undefined) this.clock.clearTimeout(this.handle);
    await this.firing;
  }

  private arm(at: number): void {
    if (this.closed) return;
    if (this.handle !== undefined) this.clock.clearTimeout(this.handle);
    this.handle = undefined;
    this.armedFor = at;
    if (at === Infinity) return;
    this.handle = this.clock.setTimeout(() => void this.tick(), Math.max(0, at - this.clock.now()));
  }

  private async tick(): Promise<void> {
    this.handle = undefined;
    this.armedFor = Infinity;
    if (this.closed) return;
    if (this.firing) {
      this.again = true; // a reminder set meanwhile may not be in what this firing reads
      return;
    }
    this.again = false;
    let next: number | undefined;
    let failed = false;
    this.firing = this.fire().then(
      (due) => {
        next = due;
        this.failures = 0;
      },
      (error: unknown) => {
        failed = true;
        if (this.failures++ === 0) this.onError(error);
      },
    );
    await this.firing;
    this.firing = undefined;
    const now = this.clock.now();
    const poll = now + (failed ? Math.max(this.pollMs, RETRY_AFTER_FAILURE_MS) : this.pollMs);
    const due = this.again ? now : failed ? poll : Math.min(next ?? Infinity, poll);
    this.arm(Math.min(this.armedFor, due));
  }
}
