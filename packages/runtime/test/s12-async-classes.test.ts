/**
 * S12: AsyncNode, AsyncFlow, AsyncBatchNode, AsyncParallelBatchNode, AsyncBatchFlow,
 * AsyncParallelBatchFlow are exported with the Python reference's names; every lifecycle method
 * may return a value or a Promise.
 */
import { describe, expect, it } from 'vitest';
import * as runtime from '../src/index.js';
import {
  AsyncBatchFlow,
  AsyncBatchNode,
  AsyncFlow,
  AsyncNode,
  AsyncParallelBatchFlow,
  AsyncParallelBatchNode,
  BatchFlow,
  BatchNode,
  Flow,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type NonIterableObject,
} from '../src/index.js';
import { captureWarnings } from './helpers.js';

interface Shared {
  log: unknown[];
}

describe('S12 Async classes', () => {
  captureWarnings();

  it.each([
    ['AsyncNode', Node],
    ['AsyncBatchNode', BatchNode],
    ['AsyncParallelBatchNode', ParallelBatchNode],
    ['AsyncFlow', Flow],
    ['AsyncBatchFlow', BatchFlow],
    ['AsyncParallelBatchFlow', ParallelBatchFlow],
  ] as const)('%s is exported under that name and extends the matching class', (name, base) => {
    const cls = (runtime as unknown as Record<string, unknown>)[name] as { name: string; prototype: object };
    expect(typeof cls).toBe('function');
    expect(cls.name).toBe(name);
    expect(cls.prototype).toBeInstanceOf(base);
  });

  it('the synchronous names are exported too', () => {
    for (const name of [
      'BaseNode',
      'Node',
      'BatchNode',
      'ParallelBatchNode',
      'Flow',
      'BatchFlow',
      'ParallelBatchFlow',
    ]) {
      expect(typeof (runtime as unknown as Record<string, unknown>)[name]).toBe('function');
    }
  });

  it('lifecycle methods may return plain values (sync) or Promises (async), mixed freely in one flow', async () => {
    class SyncNode extends AsyncNode<Shared> {
      override prep(shared: Shared): number {
        shared.log.push('sync prep');
        return 1;
      }
      override exec(n: number): number {
        return n + 1;
      }
      override post(shared: Shared, _p: unknown, e: number): string {
        shared.log.push(`sync post ${e}`);
        return 'next';
      }
    }
    class PromiseNode extends AsyncNode<Shared> {
      override async prep(shared: Shared): Promise<number> {
        await new Promise((resolve) => setImmediate(resolve));
        shared.log.push('async prep');
        return 10;
      }
      override async exec(n: number): Promise<number> {
        await Promise.resolve();
        if (this.currentRetry === 0) throw new Error('retry once');
        return n + 1;
      }
      override async post(shared: Shared, _p: unknown, e: number): Promise<string> {
        await Promise.resolve();
        shared.log.push(`async post ${e}`);
        return 'done';
      }
    }
    class ThenableFallback extends AsyncNode<Shared> {
      override exec(): never {
        throw new Error('x');
      }
      override execFallback(): Promise<string> {
        return Promise.resolve('fallback via promise');
      }
      override post(shared: Shared, _p: unknown, e: unknown): Promise<undefined> {
        shared.log.push(e);
        return Promise.resolve(undefined);
      }
    }
    const a = new SyncNode();
    // `on` returns `this`: chain named successors as a.on(...) then b.on(...).
    const b = new PromiseNode(2);
    a.on('next', b);
    b.on('done', new ThenableFallback());
    const shared: Shared = { log: [] };
    const last = await new AsyncFlow<Shared>(a).runAsync(shared);
    expect(shared.log).toEqual(['sync prep', 'sync post 2', 'async prep', 'async post 11', 'fallback via promise']);
    expect(last).toBeUndefined();
  });

  it('AsyncBatchNode and AsyncParallelBatchNode take async prep/exec/post', async () => {
    class Batch extends AsyncBatchNode<Shared> {
      override async prep(): Promise<number[]> {
        return [1, 2, 3];
      }
      override async exec(n: number): Promise<number> {
        await Promise.resolve();
        return n * 2;
      }
      override async post(shared: Shared, _p: unknown, e: unknown): Promise<void> {
        shared.log.push(e);
      }
    }
    class Parallel extends AsyncParallelBatchNode<Shared> {
      override prep(): number[] {
        return [1, 2, 3];
      }
      override async exec(n: number): Promise<number> {
        await new Promise((resolve) => setImmediate(resolve));
        return n * 3;
      }
      override post(shared: Shared, _p: unknown, e: unknown): void {
        shared.log.push(e);
      }
    }
    const shared: Shared = { log: [] };
    await new Batch().runAsync(shared);
    await new Parallel().runAsync(shared);
    expect(shared.log).toEqual([
      [2, 4, 6],
      [3, 6, 9],
    ]);
  });

  it('AsyncBatchFlow and AsyncParallelBatchFlow take an async prep returning param objects', async () => {
    class Leaf extends AsyncNode<Shared> {
      override async post(shared: Shared): Promise<void> {
        await Promise.resolve();
        shared.log.push(this.params.k);
      }
    }
    class Seq extends AsyncBatchFlow<Shared> {
      override async prep(): Promise<NonIterableObject[]> {
        return [{ k: 1 }, { k: 2 }];
      }
    }
    class Par extends AsyncParallelBatchFlow<Shared> {
      override async prep(): Promise<NonIterableObject[]> {
        return [{ k: 3 }, { k: 4 }];
      }
      override async post(shared: Shared): Promise<string> {
        shared.log.push('par post');
        return 'par done';
      }
    }
    const shared: Shared = { log: [] };
    expect(await new Seq(new Leaf()).runAsync(shared)).toBeUndefined();
    expect(await new Par(new Leaf()).runAsync(shared)).toBe('par done');
    expect(shared.log.slice(0, 2)).toEqual([1, 2]);
    expect([...shared.log.slice(2, 4)].sort()).toEqual([3, 4]);
    expect(shared.log[4]).toBe('par post');
  });

  it("a Flow's own prep/post may be async: post gets the resolved prepRes and the last action", async () => {
    const postArgs: unknown[] = [];
    class Wrapped extends AsyncFlow<Shared> {
      override async prep(): Promise<string> {
        await Promise.resolve();
        return 'resolved prepRes';
      }
      override async post(_s: Shared, prepRes: unknown, execRes: unknown): Promise<string> {
        postArgs.push(prepRes, execRes);
        return 'wrapped';
      }
    }
    class Last extends AsyncNode<Shared> {
      override async post(): Promise<string> {
        return 'last';
      }
    }
    expect(await new Wrapped(new Last()).runAsync({ log: [] })).toBe('wrapped');
    expect(postArgs).toEqual(['resolved prepRes', 'last']);
  });

  it('runAsync is the same as run', async () => {
    class Say extends AsyncNode<Shared> {
      override post(): string {
        return 'said';
      }
    }
    expect(await new Say().runAsync({ log: [] })).toBe('said');
    expect(await new Say().run({ log: [] })).toBe('said');
  });

  it('Async nodes and sync nodes mix in the same graph', async () => {
    class Plain extends Node<Shared> {
      override post(shared: Shared): void {
        shared.log.push('plain');
      }
    }
    class Asy extends AsyncNode<Shared> {
      override async post(shared: Shared): Promise<void> {
        shared.log.push('async');
      }
    }
    const a = new Asy();
    a.next(new Plain()).next(new Asy());
    const shared: Shared = { log: [] };
    await new Flow(a).run(shared);
    expect(shared.log).toEqual(['async', 'plain', 'async']);
  });
});
