import type { Clock } from './clock.js';

/**
 * Runs tasks with at most `concurrency` in flight, in the order they became ready; a task can
 * be delayed (retry backoff) without holding a slot while it waits.
 */
export class TaskQueue<T> {
  private ready: T[] = [];
  private head = 0;
  private active = 0;
  private readonly timers = new Set<unknown>();
  private closed = false;

  constructor(
    private readonly concurrency: number,
    private readonly clock: Clock,
    private readonly worker: (task: T) => Promise<void>,
    private readonly onError: (error: unknown) => void = (error) => {
      queueMicrotask(() => {
        throw error;
      });
    },
  ) {}

  /** Queues `task`, after `delayMs` milliseconds when given. */
  push(task: T, delayMs = 0): void {
    if (this.closed) return;
    if (delayMs > 0) {
      const timer = this.clock.setTimeout(() => {
        this.timers.delete(timer);
        this.push(task);
      }, delayMs);
      this.timers.add(timer);
      return;
    }
    this.ready.push(task);
    this.pump();
  }

  /** Drops queued and delayed tasks; tasks in flight finish. */
  close(): void {
    this.closed = true;
    for (const timer of this.timers) this.clock.clearTimeout(timer);
    this.timers.clear();
    this.ready = [];
    this.head = 0;
  }

  private pump(): void {
    while (!this.closed && this.active < this.concurrency && this.head < this.ready.length) {
      const task = this.ready[this.head++] as T;
      if (this.head > 1024 && this.head * 2 > this.ready.length) {
        this.ready = this.ready.slice(this.head);
        this.head = 0;
      }
      this.active++;
      this.worker(task)
        .catch(this.onError)
        .finally(() => {
          this.active--;
          this.pump();
        });
    }
  }
}
