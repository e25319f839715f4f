import type { Redis } from 'ioredis';
import { QueueflowError, type RunResult } from '@queueflow/runtime';

interface Waiter {
  resolve: (result: RunResult) => void;
  reject: (error: Error) => void;
}

/** A message on the events channel. */
export type RunEvent = { type: 'ended'; runId: string; status: string } | { type: 'cancel'; runId: string };

/**
 * Resolves `result()` calls from run events, for any number of runs over one subscriber
 * connection. A run that ended before the caller began to wait is found by a read after
 * subscribing; events missed while the connection was down are made up for by a read of every
 * awaited run on reconnect and by a periodic poll, so a wait cannot hang on a lost message.
 *
 * @see BULLMQ-NOTES: do not use `job.waitUntilFinished`; wait on your own run events.
 */
export class RunEvents {
  private readonly waiters = new Map<string, Waiter[]>();
  private poller: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly subscriber: Redis,
    private readonly channel: string,
    /** The run's result if it has ended, else `undefined`. */
    private readonly resultIfEnded: (runId: string) => Promise<RunResult | undefined>,
    private readonly pollIntervalMs = 5000,
  ) {}

  /** Subscribes; call once after the connection is ready. */
  async start(): Promise<void> {
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      const event = parseEvent(message);
      if (event?.type === 'ended' && this.waiters.has(event.runId)) void this.check(event.runId);
    });
    // ioredis resubscribes after a reconnect; anything that ended meanwhile is read again.
    this.subscriber.on('ready', () => this.checkAll());
    await this.subscriber.subscribe(this.channel);
    this.poller = setInterval(() => this.checkAll(), this.pollIntervalMs);
    this.poller.unref();
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

  /** Rejects every pending wait with `ENGINE_CLOSED` and stops polling. */
  close(): void {
    this.closed = true;
    clearInterval(this.poller);
    const error = new QueueflowError('ENGINE_CLOSED', 'the engine was closed while waiting for a run');
    for (const list of this.waiters.values()) for (const waiter of list) waiter.reject(error);
    this.waiters.clear();
  }

  private rejectAll(runId: string, error: Error): void {
    const list = this.waiters.get(runId);
    this.waiters.delete(runId);
    for (const waiter of list ?? []) waiter.reject(error);
  }

  private checkAll(): void {
    for (const runId of this.waiters.keys()) void this.check(runId);
  }

  /** Never rejects (it handles its own errors), so callers fire it with `void` and move on. */
  private async check(runId: string): Promise<void> {
    let result: RunResult | undefined;
    try {
      result = await this.resultIfEnded(runId);
    } catch (error) {
      if ((error as { code?: unknown }).code === 'RUN_NOT_FOUND') return this.rejectAll(runId, error as Error);
      return; // Redis is unreachable: the next event, reconnect or poll checks again.
    }
    if (!result) return;
    const list = this.waiters.get(runId);
    this.waiters.delete(runId);
    for (const waiter of list ?? []) waiter.resolve(result);
  }
}

export function parseEvent(message: string): RunEvent | undefined {
  try {
    const event = JSON.parse(message) as RunEvent;
    return typeof event.runId === 'string' ? event : undefined;
  } catch {
    return undefined;
  }
}
