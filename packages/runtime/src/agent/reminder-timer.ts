import type { Clock } from '../kernel/clock.js';

/**
 * Fires agents' reminders when they come due (README "Agents", reminders): a timer of the clock
 * armed for the earliest due time the store reported, or sooner when this process sets an earlier
 * one, and, where other processes set reminders too (Redis), at least every `pollMs`.
 * One firing at a time; a failed one (Redis down) is tried again after `pollMs`.
 */
export class ReminderTimer {
  private handle: unknown;
  /** When the armed timer fires, epoch ms; `Infinity`: none armed. */
  private armedFor = Infinity;
  private firing: Promise<void> | undefined;
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
    if (this.firing || this.closed) return;
    let next: number | undefined;
    let failed = false;
    this.firing = this.fire().then(
      (due) => {
        next = due;
      },
      (error: unknown) => {
        failed = true;
        this.onError(error);
      },
    );
    await this.firing;
    this.firing = undefined;
    const poll = this.clock.now() + this.pollMs;
    this.arm(Math.min(this.armedFor, failed ? poll : Math.min(next ?? Infinity, poll)));
  }
}
