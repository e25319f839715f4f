/**
 * S8: BatchNode: prep returns items (null/undefined is an empty batch: execRes is [] and post
 * still runs); exec runs once per item with the retry policy per item; execRes is the array of
 * results in item order. An item that fails after its retries and fallback fails the node: later
 * items do not run and post is not called.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchNode, Flow, Node } from '../src/index.js';

interface Shared {
  items?: unknown;
  results?: unknown;
  postCalls: number;
}

class Upper extends BatchNode<Shared> {
  log: Array<[unknown, number]> = [];
  override prep(shared: Shared): unknown {
    return shared.items;
  }
  override exec(item: unknown): unknown {
    this.log.push([item, this.currentRetry]);
    return String(item).toUpperCase();
  }
  override post(shared: Shared, _p: unknown, execRes: unknown): void {
    shared.postCalls++;
    shared.results = execRes;
  }
}

describe('S8 BatchNode', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs exec once per item, in order, and hands post the results in item order', async () => {
    const node = new Upper();
    const shared: Shared = { items: ['a', 'b', 'c'], postCalls: 0 };
    await node.run(shared);
    expect(node.log).toEqual([
      ['a', 0],
      ['b', 0],
      ['c', 0],
    ]);
    expect(shared.results).toEqual(['A', 'B', 'C']);
    expect(shared.postCalls).toBe(1);
  });

  it('runs items one after the other (never two at once)', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    class Seq extends BatchNode<Shared> {
      override prep(): number[] {
        return [1, 2, 3, 4];
      }
      override async exec(item: number): Promise<number> {
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        return item;
      }
    }
    await new Seq().run({ postCalls: 0 });
    expect(maxInFlight).toBe(1);
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['[]', []],
  ])('an empty batch (%s): exec never runs, execRes is [] and post still runs', async (_name, items) => {
    const node = new Upper();
    const shared: Shared = { items, postCalls: 0 };
    await node.run(shared);
    expect(node.log).toEqual([]);
    expect(shared.results).toEqual([]);
    expect(shared.postCalls).toBe(1);
  });

  it('refuses a prep result that is not an array', async () => {
    const shared: Shared = { items: 'abc', postCalls: 0 };
    await expect(new Upper().run(shared)).rejects.toThrow(TypeError);
    expect(shared.postCalls).toBe(0);
  });

  it('applies the retry policy per item: each item has its own tries and currentRetry from 0', async () => {
    const tries: Array<[string, number]> = [];
    class Flaky extends BatchNode<Shared> {
      override prep(): string[] {
        return ['a', 'b', 'c'];
      }
      override exec(item: string): string {
        tries.push([item, this.currentRetry]);
        // 'b' fails twice; every other item succeeds at once.
        if (item === 'b' && this.currentRetry < 2) throw new Error(`b try ${this.currentRetry}`);
        return item + this.currentRetry;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { postCalls: 0 };
    await new Flaky(3).run(shared);
    expect(tries).toEqual([
      ['a', 0],
      ['b', 0],
      ['b', 1],
      ['b', 2],
      ['c', 0],
    ]);
    expect(shared.results).toEqual(['a0', 'b2', 'c0']);
  });

  it('each item gets the full maxRetries tries (no budget shared across items)', async () => {
    const tries: Array<[string, number]> = [];
    class AllFailTwice extends BatchNode<Shared> {
      override prep(): string[] {
        return ['a', 'b'];
      }
      override exec(item: string): string {
        tries.push([item, this.currentRetry]);
        if (this.currentRetry < 1) throw new Error('first try fails');
        return item;
      }
    }
    await new AllFailTwice(2).run({ postCalls: 0 });
    expect(tries).toEqual([
      ['a', 0],
      ['a', 1],
      ['b', 0],
      ['b', 1],
    ]);
  });

  it('waits between the tries of an item, in seconds, not after its last try', async () => {
    vi.useFakeTimers();
    const tries: string[] = [];
    class Flaky extends BatchNode<Shared> {
      override prep(): string[] {
        return ['a', 'b'];
      }
      override exec(item: string): string {
        tries.push(`${item}${this.currentRetry}`);
        if (item === 'a' && this.currentRetry === 0) throw new Error('a fails once');
        return item;
      }
    }
    const run = new Flaky(2, 1).run({ postCalls: 0 });
    await vi.advanceTimersByTimeAsync(999);
    expect(tries).toEqual(['a0']);
    await vi.advanceTimersByTimeAsync(1);
    expect(tries).toEqual(['a0', 'a1', 'b0']);
    await run;
  });

  it("an item's fallback result takes that item's place in execRes", async () => {
    class WithFallback extends BatchNode<Shared> {
      override prep(): string[] {
        return ['ok1', 'bad', 'ok2'];
      }
      override exec(item: string): string {
        if (item === 'bad') throw new Error(`bad item`);
        return item;
      }
      override execFallback(prepRes: unknown, error: Error): string {
        return `fallback(${String(prepRes)}: ${error.message})`;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { postCalls: 0 };
    await new WithFallback(2).run(shared);
    expect(shared.results).toEqual(['ok1', 'fallback(bad: bad item)', 'ok2']);
  });

  it('an item that fails after retries and fallback fails the node: later items do not run, post is not called', async () => {
    const execItems: string[] = [];
    let fallbackCalls = 0;
    class Fails extends BatchNode<Shared> {
      override prep(): string[] {
        return ['a', 'bad', 'c', 'd'];
      }
      override exec(item: string): string {
        execItems.push(item);
        if (item === 'bad') throw new Error('bad item');
        return item;
      }
      override execFallback(_p: unknown, error: Error): never {
        fallbackCalls++;
        throw error;
      }
      override post(shared: Shared): void {
        shared.postCalls++;
      }
    }
    const shared: Shared = { postCalls: 0 };
    await expect(new Fails(2).run(shared)).rejects.toThrow('bad item');
    expect(execItems).toEqual(['a', 'bad', 'bad']);
    expect(fallbackCalls).toBe(1);
    expect(shared.postCalls).toBe(0);
  });

  it('a failing BatchNode fails its flow; its successors do not run', async () => {
    class Fails extends BatchNode<Shared> {
      override prep(): number[] {
        return [1];
      }
      override exec(): never {
        throw new Error('nope');
      }
    }
    class After extends Node<Shared> {
      override post(shared: Shared): void {
        shared.postCalls++;
      }
    }
    const f = new Fails();
    f.next(new After());
    const shared: Shared = { postCalls: 0 };
    await expect(new Flow(f).run(shared)).rejects.toThrow('nope');
    expect(shared.postCalls).toBe(0);
  });

  it('prep runs once per visit, however many items and retries', async () => {
    let prepCalls = 0;
    class N extends BatchNode<Shared> {
      override prep(): number[] {
        prepCalls++;
        return [1, 2, 3];
      }
      override exec(item: number): number {
        if (this.currentRetry === 0) throw new Error('retry me');
        return item;
      }
    }
    await new N(2).run({ postCalls: 0 });
    expect(prepCalls).toBe(1);
  });
});
