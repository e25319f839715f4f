/**
 * Backoff between tries: fixed `wait` seconds (PocketFlow) or exponential with an optional cap
 * and jitter (BullMQ's formula), computed by backoffDelayMs with an injectable random source.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoffDelayMs, Node, type BackoffOptions } from '../src/index.js';

describe('backoffDelayMs', () => {
  it('fixed (and no backoff): wait seconds in ms, whatever the try', () => {
    for (const failedTry of [0, 1, 5]) {
      expect(backoffDelayMs(failedTry, 0.5, undefined)).toBe(500);
      expect(backoffDelayMs(failedTry, 0.5, { type: 'fixed' })).toBe(500);
    }
    expect(backoffDelayMs(0, 0, undefined)).toBe(0);
  });

  it('exponential: wait * 2^k seconds after failed try k', () => {
    const exp: BackoffOptions = { type: 'exponential' };
    expect([0, 1, 2, 3, 4].map((k) => backoffDelayMs(k, 0.1, exp))).toEqual([100, 200, 400, 800, 1600]);
  });

  it('exponential with maxDelayMs: capped', () => {
    const exp: BackoffOptions = { type: 'exponential', maxDelayMs: 500 };
    expect([0, 1, 2, 3, 10].map((k) => backoffDelayMs(k, 0.1, exp))).toEqual([100, 200, 400, 500, 500]);
  });

  it('jitter removes a random share of up to `jitter` of the delay (deterministic with an injected random)', () => {
    const exp: BackoffOptions = { type: 'exponential', jitter: 0.5 };
    expect(backoffDelayMs(2, 0.1, exp, () => 0)).toBe(200); // 400 * (1 - 0.5)
    expect(backoffDelayMs(2, 0.1, exp, () => 0.5)).toBe(300);
    expect(backoffDelayMs(2, 0.1, exp, () => 0.999)).toBe(400); // rounded
    expect(backoffDelayMs(0, 1, { type: 'fixed', jitter: 1 }, () => 0.25)).toBe(250);
  });

  it('jitter applies after the cap', () => {
    const exp: BackoffOptions = { type: 'exponential', jitter: 0.5, maxDelayMs: 1000 };
    expect(backoffDelayMs(10, 1, exp, () => 0)).toBe(500);
  });

  it('without jitter the random source is not used', () => {
    const random = vi.fn(() => 0.3);
    backoffDelayMs(3, 0.1, { type: 'exponential' }, random);
    backoffDelayMs(3, 0.1, { type: 'fixed', jitter: 0 }, random);
    expect(random).not.toHaveBeenCalled();
  });
});

describe('Node backoff between tries', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Fails every try; records the fake clock at each try. */
  class Failing extends Node<Record<string, never>> {
    at: number[] = [];
    override exec(): never {
      this.at.push(Date.now());
      throw new Error(`try ${this.currentRetry}`);
    }
  }

  it('exponential: tries at 0, 10, 30, 70 ms for wait = 0.01 s', async () => {
    vi.useFakeTimers({ now: 0 });
    const node = new Failing({ maxRetries: 4, wait: 0.01, backoff: { type: 'exponential' } });
    const outcome = node.run({}).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(69);
    expect(node.at).toEqual([0, 10, 30]);
    await vi.advanceTimersByTimeAsync(1);
    expect(node.at).toEqual([0, 10, 30, 70]);
    expect(((await outcome) as Error).message).toBe('try 3');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fixed: tries every `wait` seconds', async () => {
    vi.useFakeTimers({ now: 0 });
    const node = new Failing(4, 0.01);
    const outcome = node.run({}).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(100);
    expect(node.at).toEqual([0, 10, 20, 30]);
    await outcome;
  });

  it('retryDelayMs can be overridden to shape the delays', async () => {
    vi.useFakeTimers({ now: 0 });
    class Custom extends Failing {
      override retryDelayMs(failedTry: number): number {
        return (failedTry + 1) * 3;
      }
    }
    const node = new Custom(3);
    const outcome = node.run({}).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(100);
    expect(node.at).toEqual([0, 3, 9]);
    await outcome;
  });
});
