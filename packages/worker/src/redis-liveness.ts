import type { RedisConnection } from './connection.js';
import { QueueflowError } from '@queueflow/runtime';

/** How often a worker PINGs Redis, in ms. */
const PING_INTERVAL_MS = 1000;

export interface RedisLivenessOptions {
  /** Where Redis is, as the lines name it (without the password). */
  server: string;
  /** How long a PING may go unanswered before the worker says that Redis does not answer, in ms. */
  timeoutMs: number;
  /** Told once, with QueueflowError `REDIS_TIMEOUT`, when Redis stops answering. */
  onError: (error: Error) => void;
  /** Told once, when Redis answers again. */
  log: (line: string) => void;
}

/**
 * Whether Redis answers a worker. A worker never gives up on Redis (BullMQ's behaviour: its
 * connections wait and reconnect however long it takes), but a Redis that keeps its connections
 * open and answers nothing (frozen, overloaded) would leave it silent. So it PINGs Redis every
 * second, one PING at a time, and when one goes unanswered for `timeoutMs` it says so once
 * (`onError`), and once more when that PING is answered (`log`), with how long Redis was silent.
 */
export class RedisLiveness {
  private timer: NodeJS.Timeout | undefined;
  private pending = false;
  /** When the PING that went unanswered was sent (epoch ms), while Redis does not answer. */
  private silentSince: number | undefined;

  constructor(
    private readonly redis: RedisConnection,
    private readonly options: RedisLivenessOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.ping(), PING_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private ping(): void {
    if (this.pending) return; // the last PING is still unanswered
    this.pending = true;
    const sentAt = Date.now();
    const { server, timeoutMs } = this.options;
    const deadline = setTimeout(() => {
      this.silentSince = sentAt;
      this.options.onError(
        new QueueflowError(
          'REDIS_TIMEOUT',
          `Redis at ${server} has not answered a PING for ${timeoutMs} ms; the worker waits for it (steps in flight wait too)`,
        ),
      );
    }, timeoutMs);
    deadline.unref();
    this.redis.ping().then(
      () => {
        this.answered(deadline);
        if (this.silentSince === undefined) return;
        const seconds = Math.round((Date.now() - this.silentSince) / 100) / 10;
        this.silentSince = undefined;
        this.options.log(`Redis at ${server} answers again after ${seconds} s`);
      },
      // A connection that failed (ioredis reports it and reconnects) or closed: not an answer.
      () => this.answered(deadline),
    );
  }

  private answered(deadline: NodeJS.Timeout): void {
    clearTimeout(deadline);
    this.pending = false;
  }
}
