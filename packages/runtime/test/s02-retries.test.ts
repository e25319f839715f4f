/**
 * S2: exec is tried up to maxRetries times in all (default 1; it counts the first try), waiting
 * `wait` seconds between tries and not after the last; currentRetry is the 0-based try index,
 * readable inside exec. prep runs once per visit: only exec is retried; errors in prep or post
 * are never retried.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Flow, Node } from '../src/index.js';
import { captureWarnings } from './helpers.js';

interface Shared {
  result?: unknown;
}

/** A node whose exec fails `failures` times, then returns 'ok'; it records every try. */
class Flaky extends Node<Shared> {
  prepCalls = 0;
  tries: number[] = [];
  fallbackCalls = 0;
  constructor(
    private readonly failures: number,
    maxRetries?: number,
    wait?: number,
  ) {
    super(maxRetries, wait);
  }
  override prep(): string {
    this.prepCalls++;
    return 'input';
  }
  override exec(): string {
    this.tries.push(this.currentRetry);
    if (this.tries.length <= this.failures) throw new Error(`try ${this.currentRetry} failed`);
    return 'ok';
  }
  override execFallback(_prepRes: unknown, error: Error): string {
    this.fallbackCalls++;
    throw error;
  }
  override post(shared: Shared, _p: unknown, execRes: unknown): void {
    shared.result = execRes;
  }
}

describe('S2 retries', () => {
  captureWarnings();
  afterEach(() => {
    vi.useRealTimers();
  });

  it('defaults to one try and no wait', async () => {
    const node = new Flaky(1);
    expect(node.maxRetries).toBe(1);
    expect(node.wait).toBe(0);
    await expect(node.run({})).rejects.toThrow('try 0 failed');
    expect(node.tries).toEqual([0]);
  });

  it('maxRetries counts the first try: maxRetries = 3 means 3 tries in all', async () => {
    const node = new Flaky(Infinity, 3);
    await expect(node.run({})).rejects.toThrow('try 2 failed');
    expect(node.tries).toEqual([0, 1, 2]);
    expect(node.fallbackCalls).toBe(1);
  });

  it('maxRetries = 1 means exactly one try, then the fallback', async () => {
    const node = new Flaky(Infinity, 1);
    await expect(node.run({})).rejects.toThrow('try 0 failed');
    expect(node.tries).toEqual([0]);
    expect(node.fallbackCalls).toBe(1);
  });

  it('succeeds on the last allowed try; currentRetry is the 0-based try index inside exec', async () => {
    const node = new Flaky(2, 3);
    const shared: Shared = {};
    await node.run(shared);
    expect(node.tries).toEqual([0, 1, 2]);
    expect(shared.result).toBe('ok');
    expect(node.fallbackCalls).toBe(0);
  });

  it('stops trying after the first success', async () => {
    const node = new Flaky(1, 5);
    await node.run({});
    expect(node.tries).toEqual([0, 1]);
  });

  it('currentRetry restarts at 0 on every visit of the node in a flow', async () => {
    const seen: number[] = [];
    let visits = 0;
    class Loop extends Node<Shared> {
      override exec(): string {
        seen.push(this.currentRetry);
        if (this.currentRetry === 0) throw new Error('first try fails');
        return 'ok';
      }
      override post(): string | undefined {
        return ++visits < 3 ? 'again' : undefined;
      }
    }
    const loop = new Loop(2);
    loop.on('again', loop);
    await new Flow<Shared>(loop).run({});
    expect(seen).toEqual([0, 1, 0, 1, 0, 1]);
  });

  it('runs prep once per visit: only exec is retried', async () => {
    const node = new Flaky(2, 3);
    await node.run({});
    expect(node.tries).toHaveLength(3);
    expect(node.prepCalls).toBe(1);
  });

  it('never retries an error thrown by prep', async () => {
    let prepCalls = 0;
    let execCalls = 0;
    class BadPrep extends Node<Shared> {
      override prep(): never {
        prepCalls++;
        throw new Error('prep broke');
      }
      override exec(): void {
        execCalls++;
      }
    }
    await expect(new BadPrep(5).run({})).rejects.toThrow('prep broke');
    expect(prepCalls).toBe(1);
    expect(execCalls).toBe(0);
  });

  it('never retries an error thrown by post (nor exec again, nor the fallback)', async () => {
    let postCalls = 0;
    let execCalls = 0;
    let fallbackCalls = 0;
    class BadPost extends Node<Shared> {
      override exec(): string {
        execCalls++;
        return 'fine';
      }
      override execFallback(): void {
        fallbackCalls++;
      }
      override post(): never {
        postCalls++;
        throw new Error('post broke');
      }
    }
    await expect(new BadPost(5).run({})).rejects.toThrow('post broke');
    expect(postCalls).toBe(1);
    expect(execCalls).toBe(1);
    expect(fallbackCalls).toBe(0);
  });

  it('waits `wait` seconds between tries (fake clock)', async () => {
    vi.useFakeTimers();
    const node = new Flaky(2, 3, 0.05); // 50 ms between tries
    const shared: Shared = {};
    const run = node.run(shared);
    await vi.advanceTimersByTimeAsync(0);
    expect(node.tries).toEqual([0]);
    await vi.advanceTimersByTimeAsync(49);
    expect(node.tries).toEqual([0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(node.tries).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(49);
    expect(node.tries).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(1);
    expect(node.tries).toEqual([0, 1, 2]);
    await run;
    expect(shared.result).toBe('ok');
  });

  it('does not wait after the last try: the fallback runs at once', async () => {
    vi.useFakeTimers();
    const node = new Flaky(Infinity, 2, 10); // 10 s between tries
    let settled = false;
    // Capture the outcome at once, so that the rejection is never unhandled.
    const outcome = node.run({}).then(
      () => {
        settled = true;
        return undefined;
      },
      (error: unknown) => {
        settled = true;
        return error;
      },
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(node.tries).toEqual([0]);
    await vi.advanceTimersByTimeAsync(10_000);
    // The second (last) try failed at t = 10 s: the fallback and the rejection follow with no
    // further time passing and no timer left behind.
    expect(node.tries).toEqual([0, 1]);
    expect(node.fallbackCalls).toBe(1);
    expect(settled).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    expect(await outcome).toEqual(new Error('try 1 failed'));
  });

  it('does not wait at all with a single try or wait = 0', async () => {
    vi.useFakeTimers();
    const single = new Flaky(Infinity, 1, 10);
    const p1 = single.run({});
    await expect(p1).rejects.toThrow();
    expect(vi.getTimerCount()).toBe(0);
    const noWait = new Flaky(2, 3, 0);
    await noWait.run({});
    expect(noWait.tries).toEqual([0, 1, 2]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('accepts the options form { maxRetries, wait }', async () => {
    class N extends Node<Shared> {
      tries = 0;
      override exec(): never {
        this.tries++;
        throw new Error('no');
      }
    }
    const node = new N({ maxRetries: 4, wait: 0 });
    expect(node.maxRetries).toBe(4);
    await expect(node.run({})).rejects.toThrow('no');
    expect(node.tries).toBe(4);
  });
});
