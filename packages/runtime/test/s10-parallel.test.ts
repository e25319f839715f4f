/**
 * S10: ParallelBatchNode / ParallelBatchFlow: as S8/S9 but concurrently; results keep item
 * order; each item counts its own tries (no retry counter shared across items). The first
 * failure fails the node; siblings still running stop at their next step boundary and write
 * nothing to shared after the failure. An optional concurrency limit bounds how many run at once.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Node, NonRetryableError, ParallelBatchFlow, ParallelBatchNode, type NonIterableObject } from '../src/index.js';
import { captureWarnings, deferred, flushMacrotask, InFlight, within, type Deferred } from './helpers.js';

interface Shared {
  items?: unknown;
  results?: unknown;
  writes: string[];
}

/** Resolves once `count` calls to `arrive()` happened: proves that much work is in flight at once. */
function barrier(count: number): { arrive: () => Promise<void> } {
  const all = deferred();
  let arrived = 0;
  return {
    arrive: () => {
      if (++arrived === count) all.resolve();
      return within(all.promise, 30_000, `only ${arrived} of ${count} items were in flight together`);
    },
  };
}

describe('S10 ParallelBatchNode', { timeout: 5000 }, () => {
  captureWarnings();
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs the items concurrently (all in flight together)', async () => {
    const b = barrier(4);
    class All extends ParallelBatchNode<Shared> {
      override prep(): number[] {
        return [1, 2, 3, 4];
      }
      override async exec(item: number): Promise<number> {
        await b.arrive();
        return item * 10;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { writes: [] };
    await new All().run(shared);
    expect(shared.results).toEqual([10, 20, 30, 40]);
  });

  it('keeps results in item order when items finish in reverse order', async () => {
    const gates: Deferred<void>[] = [0, 1, 2, 3].map(() => deferred());
    const started = barrier(5); // the four items and this test
    const finished: number[] = [];
    class Reverse extends ParallelBatchNode<Shared> {
      override prep(): number[] {
        return [0, 1, 2, 3];
      }
      override async exec(item: number): Promise<string> {
        void started.arrive(); // only signals: the test awaits the barrier
        await gates[item]!.promise;
        finished.push(item);
        return `r${item}`;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { writes: [] };
    const run = new Reverse().run(shared);
    await started.arrive(); // resolves once all four items are in exec
    for (const i of [3, 2, 1, 0]) {
      gates[i]!.resolve();
      await flushMacrotask();
    }
    await run;
    expect(finished).toEqual([3, 2, 1, 0]);
    expect(shared.results).toEqual(['r0', 'r1', 'r2', 'r3']);
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
  ])('an empty batch (%s): execRes is [] and post runs', async (_n, items) => {
    let execCalls = 0;
    class Empty extends ParallelBatchNode<Shared> {
      override prep(shared: Shared): unknown {
        return shared.items;
      }
      override exec(): void {
        execCalls++;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { items, writes: [] };
    await new Empty().run(shared);
    expect(shared.results).toEqual([]);
    expect(execCalls).toBe(0);
  });

  it('each item counts its own tries: currentRetry is per item, even read after an await (PocketFlow PR #148)', async () => {
    const fastOnLastTry = deferred();
    const log: Array<[string, number, number]> = [];
    class Race extends ParallelBatchNode<Shared> {
      override prep(): string[] {
        return ['slow', 'fast'];
      }
      override async exec(item: string): Promise<string> {
        const before = this.currentRetry;
        // 'slow' holds its first try open until 'fast' has gone through three tries.
        if (item === 'slow' && before === 0) await within(fastOnLastTry.promise, 30_000, 'fast never got there');
        const after = this.currentRetry;
        log.push([item, before, after]);
        if (item === 'fast') {
          if (after < 2) throw new Error(`fast try ${after}`);
          fastOnLastTry.resolve();
        }
        if (item === 'slow' && after < 1) throw new Error(`slow try ${after}`);
        return `${item}@${after}`;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { writes: [] };
    await new Race(3).run(shared);
    expect(log.filter(([item]) => item === 'fast')).toEqual([
      ['fast', 0, 0],
      ['fast', 1, 1],
      ['fast', 2, 2],
    ]);
    expect(log.filter(([item]) => item === 'slow')).toEqual([
      ['slow', 0, 0],
      ['slow', 1, 1],
    ]);
    expect(shared.results).toEqual(['slow@1', 'fast@2']);
  });

  it('each item gets the full maxRetries tries even when all items fail concurrently', async () => {
    const tries = new Map<number, number[]>();
    const b = barrier(3);
    class AllFail extends ParallelBatchNode<Shared> {
      override prep(): number[] {
        return [0, 1, 2];
      }
      override async exec(item: number): Promise<never> {
        const list = tries.get(item) ?? [];
        list.push(this.currentRetry);
        tries.set(item, list);
        if (this.currentRetry === 0) await b.arrive();
        throw new Error(`item ${item}`);
      }
      override execFallback(prepRes: unknown): string {
        return `fallback ${String(prepRes)}`;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { writes: [] };
    await new AllFail(3).run(shared);
    expect([...tries.entries()].sort()).toEqual([
      [0, [0, 1, 2]],
      [1, [0, 1, 2]],
      [2, [0, 1, 2]],
    ]);
    expect(shared.results).toEqual(['fallback 0', 'fallback 1', 'fallback 2']);
  });

  it('the first failure fails the node with that error; post is not called', async () => {
    const b = barrier(3);
    class OneBad extends ParallelBatchNode<Shared> {
      override prep(): string[] {
        return ['ok1', 'bad', 'ok2'];
      }
      override async exec(item: string): Promise<string> {
        await b.arrive();
        if (item === 'bad') throw new Error('bad item');
        return item;
      }
      override post(shared: Shared): void {
        shared.writes.push('post');
      }
    }
    const shared: Shared = { writes: [] };
    await expect(new OneBad().run(shared)).rejects.toThrow('bad item');
    expect(shared.writes).toEqual([]);
  });

  it('a sibling still running when the node fails stops at its next step boundary (no further try)', async () => {
    const release = deferred();
    const bothStarted = barrier(2);
    const slowTries: number[] = [];
    const slowDone = deferred();
    class Abandon extends ParallelBatchNode<Shared> {
      override prep(): string[] {
        return ['bad', 'slow'];
      }
      override async exec(item: string): Promise<string> {
        if (item === 'bad') {
          await bothStarted.arrive();
          throw new Error('bad item');
        }
        slowTries.push(this.currentRetry);
        try {
          void bothStarted.arrive(); // only signals: the 'bad' item awaits the barrier
          await release.promise;
          throw new Error('slow failed after the node did');
        } finally {
          slowDone.resolve();
        }
      }
      override post(shared: Shared): void {
        shared.writes.push('post');
      }
    }
    const shared: Shared = { writes: [] };
    await expect(new Abandon(5).run(shared)).rejects.toThrow('bad item');
    release.resolve();
    await slowDone.promise;
    await flushMacrotask();
    await flushMacrotask();
    expect(slowTries).toEqual([0]);
    expect(shared.writes).toEqual([]);
  });

  it('the failure ends a sibling’s wait between tries at once (no timer left, no further try)', async () => {
    vi.useFakeTimers();
    const slowFailedOnce = deferred();
    const slowTries: number[] = [];
    class Abandon extends ParallelBatchNode<Shared> {
      override prep(): string[] {
        return ['bad', 'slow'];
      }
      override async exec(item: string): Promise<never> {
        if (item === 'bad') {
          await slowFailedOnce.promise;
          // Non-retryable: 'bad' fails the node at once, while 'slow' waits for its retry.
          throw new NonRetryableError('bad item');
        }
        slowTries.push(this.currentRetry);
        slowFailedOnce.resolve();
        throw new Error('slow fails, waits 10 s, retries');
      }
    }
    const node = new Abandon(3, 10);
    const outcome = node.run({ writes: [] }).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(0);
    expect(await outcome).toBeInstanceOf(NonRetryableError);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(slowTries).toEqual([0]);
  });

  it('the concurrency option bounds how many items are in flight at once', async () => {
    const flight = new InFlight();
    class Bounded extends ParallelBatchNode<Shared> {
      override prep(): number[] {
        return [0, 1, 2, 3, 4, 5, 6];
      }
      override async exec(item: number): Promise<number> {
        flight.enter();
        await flushMacrotask();
        await flushMacrotask();
        flight.leave();
        return item;
      }
      override post(shared: Shared, _p: unknown, execRes: unknown): void {
        shared.results = execRes;
      }
    }
    const shared: Shared = { writes: [] };
    await new Bounded({ concurrency: 3 }).run(shared);
    expect(flight.max).toBe(3);
    expect(shared.results).toEqual([0, 1, 2, 3, 4, 5, 6]);

    const unbounded = new InFlight();
    class Unbounded extends Bounded {
      override async exec(item: number): Promise<number> {
        unbounded.enter();
        await flushMacrotask();
        unbounded.leave();
        return item;
      }
    }
    await new Unbounded().run(shared);
    expect(unbounded.max).toBe(7);
  });

  it('concurrency: 1 runs the items one at a time, in order', async () => {
    const flight = new InFlight();
    const order: number[] = [];
    class One extends ParallelBatchNode<Shared> {
      override prep(): number[] {
        return [0, 1, 2];
      }
      override async exec(item: number): Promise<number> {
        flight.enter();
        order.push(item);
        await flushMacrotask();
        flight.leave();
        return item;
      }
    }
    await new One({ concurrency: 1 }).run({ writes: [] });
    expect(flight.max).toBe(1);
    expect(order).toEqual([0, 1, 2]);
  });

  it('after a failure, no further item starts under a concurrency limit', async () => {
    const started: string[] = [];
    class Bounded extends ParallelBatchNode<Shared> {
      override prep(): string[] {
        return ['bad', 'b', 'c', 'd'];
      }
      override async exec(item: string): Promise<string> {
        started.push(item);
        await flushMacrotask();
        if (item === 'bad') throw new Error('bad item');
        return item;
      }
    }
    await expect(new Bounded({ concurrency: 1 }).run({ writes: [] })).rejects.toThrow('bad item');
    await flushMacrotask();
    expect(started).toEqual(['bad']);
  });

  it('after a failure, a sibling that then succeeds does not start the next item', async () => {
    const started: string[] = [];
    const release = deferred();
    const slowDone = deferred();
    class Bounded extends ParallelBatchNode<Shared> {
      override prep(): string[] {
        return ['bad', 'slow', 'c', 'd'];
      }
      override async exec(item: string): Promise<string> {
        started.push(item);
        if (item === 'bad') {
          await flushMacrotask();
          throw new Error('bad item');
        }
        if (item === 'slow') {
          await release.promise;
          slowDone.resolve();
        }
        return item;
      }
    }
    await expect(new Bounded({ concurrency: 2 }).run({ writes: [] })).rejects.toThrow('bad item');
    release.resolve();
    await slowDone.promise;
    await flushMacrotask();
    await flushMacrotask();
    expect(started).toEqual(['bad', 'slow']);
  });
});

describe('S10 ParallelBatchFlow', { timeout: 5000 }, () => {
  captureWarnings();

  /** Records its params; waits at `await` for the branch's own gate when one is given. */
  class Step extends Node<Shared> {
    constructor(
      private readonly tag: string,
      private readonly hook?: (node: Step) => Promise<void>,
    ) {
      super();
    }
    override async exec(): Promise<void> {
      await this.hook?.(this);
    }
    override post(shared: Shared): void {
      shared.writes.push(`${this.tag}:${String(this.params.i)}`);
    }
  }

  class Fan extends ParallelBatchFlow<Shared> {
    override prep(shared: Shared): NonIterableObject[] {
      return shared.items as NonIterableObject[];
    }
  }

  it('runs the walks concurrently, with {...flow.params, ...item}', async () => {
    const b = barrier(3);
    const seen: NonIterableObject[] = [];
    const step = new Step('a', async (node) => {
      seen.push(node.params);
      await b.arrive();
    });
    const flow = new Fan(step);
    flow.setParams({ base: 1, i: 'flow' });
    const shared: Shared = { items: [{ i: 1 }, { i: 2 }, { i: 3 }], writes: [] };
    await flow.run(shared);
    expect(seen).toEqual([
      { base: 1, i: 1 },
      { base: 1, i: 2 },
      { base: 1, i: 3 },
    ]);
    expect([...shared.writes].sort()).toEqual(['a:1', 'a:2', 'a:3']);
  });

  it('post(shared, list, undefined) runs after all walks; the default returns undefined', async () => {
    const postArgs: unknown[][] = [];
    class Observed extends Fan {
      override post(shared: Shared, prepRes: unknown, execRes: unknown): void {
        postArgs.push([prepRes, execRes, [...shared.writes].sort()]);
      }
    }
    const items = [{ i: 1 }, { i: 2 }];
    await new Observed(new Step('a')).run({ items, writes: [] });
    expect(postArgs).toEqual([[items, undefined, ['a:1', 'a:2']]]);
    expect(await new Fan(new Step('a')).run({ items, writes: [] })).toBeUndefined();
  });

  it('null prep is an empty list: no walk, post runs', async () => {
    const postArgs: unknown[] = [];
    class Observed extends Fan {
      override post(_s: Shared, prepRes: unknown): void {
        postArgs.push(prepRes);
      }
    }
    const shared: Shared = { items: null, writes: [] };
    await new Observed(new Step('a')).run(shared);
    expect(postArgs).toEqual([[]]);
    expect(shared.writes).toEqual([]);
  });

  it('the first failure fails the flow; a sibling in exec skips its post and its successors', async () => {
    const release = deferred();
    const bothInExec = barrier(2);
    const goodExecDone = deferred();
    const a = new Step('a', async (node) => {
      if (node.params.i === 'bad') {
        await bothInExec.arrive();
        throw new Error('bad branch');
      }
      void bothInExec.arrive(); // only signals: the 'bad' branch awaits the barrier
      await release.promise;
      goodExecDone.resolve();
    });
    a.next(new Step('b'));
    class Observed extends Fan {
      override post(shared: Shared): void {
        shared.writes.push('flow post');
      }
    }
    const shared: Shared = { items: [{ i: 'bad' }, { i: 'good' }], writes: [] };
    await expect(new Observed(a).run(shared)).rejects.toThrow('bad branch');
    const atFailure = [...shared.writes];
    release.resolve();
    await goodExecDone.promise;
    await flushMacrotask();
    await flushMacrotask();
    expect(atFailure).toEqual([]);
    expect(shared.writes).toEqual([]);
  });

  it('a sibling between two nodes does not start the next node after the failure', async () => {
    const release = deferred();
    const goodInPost = deferred();
    const goodPostDone = deferred();
    class SlowPost extends Node<Shared> {
      override async exec(): Promise<void> {
        if (this.params.i === 'bad') {
          await goodInPost.promise;
          throw new Error('bad branch');
        }
      }
      override async post(shared: Shared): Promise<void> {
        shared.writes.push(`a:${String(this.params.i)}`);
        goodInPost.resolve();
        await release.promise;
        goodPostDone.resolve();
      }
    }
    const bStarted: unknown[] = [];
    class B extends Step {
      override prep(): void {
        bStarted.push(this.params.i);
      }
    }
    const a = new SlowPost();
    a.next(new B('b'));
    const shared: Shared = { items: [{ i: 'bad' }, { i: 'good' }], writes: [] };
    await expect(new Fan(a).run(shared)).rejects.toThrow('bad branch');
    expect(shared.writes).toEqual(['a:good']);
    release.resolve();
    await goodPostDone.promise;
    await flushMacrotask();
    await flushMacrotask();
    // 'b' would write 'b:good': the walk stopped at the step boundary, before b's prep.
    expect(shared.writes).toEqual(['a:good']);
    expect(bStarted).toEqual([]);
  });

  it('each walk has its own copies: currentRetry is per walk', async () => {
    const b = barrier(3);
    const log: Array<[unknown, number]> = [];
    const step = new (class extends Node<Shared> {
      override async exec(): Promise<void> {
        const before = this.currentRetry;
        if (before === 0) await b.arrive();
        await flushMacrotask();
        log.push([this.params.i, this.currentRetry]);
        expect(this.currentRetry).toBe(before);
        if (this.currentRetry < Number(this.params.i)) throw new Error('again');
      }
    })(3);
    await new Fan(step).run({ items: [{ i: 0 }, { i: 1 }, { i: 2 }], writes: [] });
    const byItem = (i: number): number[] => log.filter(([item]) => item === i).map(([, t]) => t);
    expect(byItem(0)).toEqual([0]);
    expect(byItem(1)).toEqual([0, 1]);
    expect(byItem(2)).toEqual([0, 1, 2]);
  });

  it('the concurrency option bounds how many walks are in flight at once', async () => {
    const flight = new InFlight();
    const step = new Step('a', async () => {
      flight.enter();
      await flushMacrotask();
      await flushMacrotask();
      flight.leave();
    });
    const items = [1, 2, 3, 4, 5].map((i) => ({ i }));
    const shared: Shared = { items, writes: [] };
    await new Fan(step, { concurrency: 2 }).run(shared);
    expect(flight.max).toBe(2);
    expect(shared.writes).toHaveLength(5);
    const all = new InFlight();
    const step2 = new Step('a', async () => {
      all.enter();
      await flushMacrotask();
      all.leave();
    });
    await new Fan(step2).run({ items, writes: [] });
    expect(all.max).toBe(5);
  });
});
