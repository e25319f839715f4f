import { QueueflowError } from '../errors/queueflow-error.js';
import type { RunResult } from './engine.js';
import type { RunEventSource } from './run-events.js';

interface Waiter {
  resolve: (result: RunResult) => void;
  reject: (error: Error) => void;
}

/**
 * Resolves `result()` calls from run events, for any number of runs over one subscription. A run
 * that ended before the caller began to wait is found by a read after subscribing; events missed
 * while a subscription was down are made up for by a read of every awaited run on `resync` and,
 * where events can be lost (pub/sub), by a periodic poll, so a wait cannot hang on a lost event.
 *
 * @see BULLMQ-NOTES: do not use `job.waitUntilFinished`; wait on your own run events.
 */
export class ResultWaiter {
  private readonly waiters = new Map<string, Waiter[]>();
  private poller: ReturnType<typeof setInterval> | undefined;
  private unsubscribe: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly events: RunEventSource,
    /** The run's result if it has ended, else `undefined`. @throws QueueflowError RUN_NOT_FOUND, CORRUPT_RUN */
    private readonly resultIfEnded: (runId: string) => Promise<RunResult | undefined>,
    /** How often every awaited run is read again, in ms; `undefined`: never (no event is lost). */
    private readonly pollIntervalMs?: number,
  ) {}

  /** Subscribes; call once before the first wait. */
  async start(): Promise<void> {
    this.unsubscribe = await this.events.subscribe({
      ended: (runId) => {
        if (this.waiters.has(runId)) void this.check(runId);
      },
      resync: () => this.checkAll(),
    });
    if (this.pollIntervalMs !== undefined) {
      this.poller = setInterval(() => this.checkAll(), this.pollIntervalMs);
      this.poller.unref?.();
    }
  }

  /** Resolves with the run's result once it has ended (at once if it already has). */
  wait(runId: string): Promise<RunResult> {
    if (this.closed) return Promise.reject(new QueueflowError('ENGINE_CLOSED', 'the engine is closed'));
    const promise = new Promise<RunResult>((resolve, reject) => {
      const list = this.waiters.get(runId) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(runId, list);
    });
    void this.check(runId);
    return promise;
  }

  /** Rejects every pending wait with `ENGINE_CLOSED` and stops listening. */
  close(): void {
    this.closed = true;
    clearInterval(this.poller);
    this.unsubscribe?.();
    const error = new QueueflowError('ENGINE_CLOSED', 'the engine was closed while waiting for a run');
    for (const list of this.waiters.values()) for (const waiter of list) waiter.reject(error);
    this.waiters.clear();
  }

  private checkAll(): void {
    for (const runId of this.waiters.keys()) void this.check(runId);
  }

  private async check(runId: string): Promise<void> {
    let result: RunResult | undefined;
    try {
      result = await this.resultIfEnded(runId);
    } catch (error) {
      // An unknown run, or one whose checkpoint cannot be read (not even `shared`), will not mend.
      const code = (error as { code?: unknown }).code;
      if (code === 'RUN_NOT_FOUND' || code === 'CORRUPT_RUN') this.settle(runId, (w) => w.reject(error as Error));
      return; // the store is unreachable: the next event, resync or poll checks again
    }
    if (result) this.settle(runId, (w) => w.resolve(result));
  }

  private settle(runId: string, how: (waiter: Waiter) => void): void {
    const list = this.waiters.get(runId);
    this.waiters.delete(runId);
    for (const waiter of list ?? []) how(waiter);
  }
}
