/**
 * Extras on the retry policy: `timeoutMs` makes a slow try fail (and it counts as a try);
 * NonRetryableError (or any error with `retryable === false`) skips the remaining tries and goes
 * straight to execFallback.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  BatchNode,
  Node,
  NodeTimeoutError,
  NonRetryableError,
  QueueflowError,
  type NodeOptions,
} from '../src/index.js';

interface Shared {
  result?: unknown;
}

describe('timeoutMs', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Each try takes `durations[try]` ms (fake clock), then succeeds. */
  class Timed extends Node<Shared> {
    tries: number[] = [];
    signals: Array<AbortSignal | undefined> = [];
    fallbackErrors: Error[] = [];
    constructor(
      private readonly durations: number[],
      options: NodeOptions,
      private readonly withFallback = false,
    ) {
      super(options);
    }
    override async exec(): Promise<string> {
      const attempt = this.currentRetry;
      this.tries.push(attempt);
      this.signals.push(this.signal);
      await new Promise((resolve) => setTimeout(resolve, this.durations[attempt] ?? 0));
      return `done on try ${attempt}`;
    }
    override execFallback(_p: unknown, error: Error): string {
      this.fallbackErrors.push(error);
      if (!this.withFallback) throw error;
      return 'fallback';
    }
    override post(shared: Shared, _p: unknown, execRes: unknown): void {
      shared.result = execRes;
    }
  }

  it('a try slower than timeoutMs fails with NodeTimeoutError (code NODE_TIMEOUT)', async () => {
    vi.useFakeTimers();
    const node = new Timed([1000], { timeoutMs: 50, name: 'fetch' });
    const outcome = node.run({}).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(49);
    expect(node.fallbackErrors).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(NodeTimeoutError);
    expect((error as NodeTimeoutError).code).toBe('NODE_TIMEOUT');
    expect((error as Error).message).toBe('fetch: exec timed out after 50 ms (timeoutMs)');
    expect(node.fallbackErrors).toEqual([error]);
  });

  it('the message names the class when the node has no name', async () => {
    vi.useFakeTimers();
    const node = new Timed([1000], { timeoutMs: 5 });
    const outcome = node.run({}).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(5);
    expect(((await outcome) as Error).message).toBe('Timed: exec timed out after 5 ms (timeoutMs)');
  });

  it('a timed-out try counts as a try: the next try runs, and can succeed', async () => {
    vi.useFakeTimers();
    const node = new Timed([1000, 10], { timeoutMs: 50, maxRetries: 2 });
    const shared: Shared = {};
    const run = node.run(shared);
    await vi.advanceTimersByTimeAsync(50);
    expect(node.tries).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(10);
    await run;
    expect(shared.result).toBe('done on try 1');
  });

  it('with every try timing out, the fallback gets the last timeout after maxRetries tries', async () => {
    vi.useFakeTimers();
    const node = new Timed([1000, 1000, 1000], { timeoutMs: 20, maxRetries: 3 }, true);
    const shared: Shared = {};
    const run = node.run(shared);
    await vi.advanceTimersByTimeAsync(60);
    await run;
    expect(node.tries).toEqual([0, 1, 2]);
    expect(node.fallbackErrors).toHaveLength(1);
    expect(node.fallbackErrors[0]).toBeInstanceOf(NodeTimeoutError);
    expect(shared.result).toBe('fallback');
  });

  it('applies per try, not to the whole visit', async () => {
    vi.useFakeTimers();
    class SlowFails extends Timed {
      override async exec(): Promise<string> {
        const result = await super.exec();
        if (this.currentRetry < 2) throw new Error('fails after 40 ms');
        return result;
      }
    }
    const node = new SlowFails([40, 40, 40], { timeoutMs: 50, maxRetries: 3 });
    const shared: Shared = {};
    const run = node.run(shared);
    await vi.advanceTimersByTimeAsync(120);
    await run;
    expect(shared.result).toBe('done on try 2');
  });

  it('aborts this.signal with the timeout error, so exec can stop its own work', async () => {
    vi.useFakeTimers();
    const node = new Timed([1000], { timeoutMs: 10 });
    const outcome = node.run({}).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(10);
    const error = await outcome;
    const signal = node.signals[0];
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
  });

  it('leaves no timer behind when a try finishes in time', async () => {
    vi.useFakeTimers();
    const node = new Timed([5], { timeoutMs: 50 });
    const shared: Shared = {};
    const run = node.run(shared);
    await vi.advanceTimersByTimeAsync(5);
    await run;
    expect(shared.result).toBe('done on try 0');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('applies to each item of a BatchNode', async () => {
    vi.useFakeTimers();
    class Items extends BatchNode<Shared> {
      override prep(): number[] {
        return [5, 100, 5];
      }
      override async exec(ms: number): Promise<number> {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return ms;
      }
      override execFallback(_p: unknown, error: Error): string {
        return error.name;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.result = execRes;
      }
    }
    const shared: Shared = {};
    const run = new Items({ timeoutMs: 20 }).run(shared);
    await vi.advanceTimersByTimeAsync(30);
    await run;
    expect(shared.result).toEqual([5, 'NodeTimeoutError', 5]);
  });
});

describe('NonRetryableError', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('skips the remaining tries: execFallback runs at once with that error', async () => {
    const tries: number[] = [];
    const fallbackErrors: Error[] = [];
    const thrown = new NonRetryableError('bad request: retrying will not help');
    class N extends Node<Shared> {
      override exec(): never {
        tries.push(this.currentRetry);
        throw thrown;
      }
      override execFallback(_p: unknown, error: Error): string {
        fallbackErrors.push(error);
        return 'fallback';
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.result = execRes;
      }
    }
    const shared: Shared = {};
    await new N(5).run(shared);
    expect(tries).toEqual([0]);
    expect(fallbackErrors).toEqual([thrown]);
    expect(fallbackErrors[0]).toBe(thrown);
    expect(shared.result).toBe('fallback');
  });

  it('is a QueueflowError with code NON_RETRYABLE and retryable false; the default fallback rethrows it', async () => {
    const error = new NonRetryableError('stop', { cause: new Error('root') });
    expect(error).toBeInstanceOf(QueueflowError);
    expect(error.code).toBe('NON_RETRYABLE');
    expect(error.retryable).toBe(false);
    expect(error.name).toBe('NonRetryableError');
    expect((error.cause as Error).message).toBe('root');
    let tries = 0;
    class N extends Node<Shared> {
      override exec(): never {
        tries++;
        throw error;
      }
    }
    await expect(new N(3).run({})).rejects.toBe(error);
    expect(tries).toBe(1);
  });

  it('stops at the try that throws it, without waiting', async () => {
    vi.useFakeTimers();
    const tries: number[] = [];
    class N extends Node<Shared> {
      override exec(): never {
        tries.push(this.currentRetry);
        if (this.currentRetry === 0) throw new Error('transient');
        throw new NonRetryableError('permanent');
      }
    }
    const outcome = new N(5, 1).run({}).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1000);
    expect(tries).toEqual([0, 1]);
    expect(vi.getTimerCount()).toBe(0);
    expect(((await outcome) as Error).message).toBe('permanent');
  });

  it('any error with retryable === false stops retries the same way', async () => {
    let tries = 0;
    class N extends Node<Shared> {
      override exec(): never {
        tries++;
        throw new QueueflowError('NODE_FAILED', 'not retryable', { retryable: false });
      }
    }
    await expect(new N(4).run({})).rejects.toThrow('not retryable');
    expect(tries).toBe(1);
  });

  it('in a BatchNode it skips only that item’s remaining tries', async () => {
    const tries: string[] = [];
    class Items extends BatchNode<Shared> {
      override prep(): string[] {
        return ['a', 'fatal', 'b'];
      }
      override exec(item: string): string {
        tries.push(`${item}${this.currentRetry}`);
        if (item === 'fatal') throw new NonRetryableError('fatal item');
        if (this.currentRetry === 0) throw new Error('transient');
        return item;
      }
      override execFallback(prepRes: unknown): string {
        return `fallback ${String(prepRes)}`;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.result = execRes;
      }
    }
    const shared: Shared = {};
    await new Items(3).run(shared);
    expect(tries).toEqual(['a0', 'a1', 'fatal0', 'b0', 'b1']);
    expect(shared.result).toEqual(['a', 'fallback fatal', 'b']);
  });
});
