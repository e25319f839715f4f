/**
 * S6: each visit runs a shallow copy of the node: node objects are templates, so per-visit
 * fields never leak between visits, runs or concurrent branches (a mutable object held by the
 * template is shared, as in the reference). The flow's params replace the params of each visited
 * copy, nested flows included.
 */
import { describe, expect, it } from 'vitest';
import { Flow, Node, ParallelBatchFlow, type NonIterableObject } from '../src/index.js';
import { captureWarnings, deferred, within } from './helpers.js';

interface Shared {
  visits: number;
  seen: unknown[];
}

describe('S6 per-visit copies', () => {
  captureWarnings();

  it('a field set in one visit is not seen in the next visit of the same node', async () => {
    class Loop extends Node<Shared> {
      mark: string | undefined;
      override prep(shared: Shared): void {
        shared.seen.push(this.mark);
        this.mark = `visit ${shared.visits}`;
      }
      override post(shared: Shared): string | undefined {
        shared.visits++;
        return shared.visits < 3 ? 'again' : undefined;
      }
    }
    const loop = new Loop();
    loop.on('again', loop);
    const shared: Shared = { visits: 0, seen: [] };
    await new Flow(loop).run(shared);
    expect(shared.visits).toBe(3);
    expect(shared.seen).toEqual([undefined, undefined, undefined]);
    // The template itself never ran.
    expect(loop.mark).toBeUndefined();
  });

  it('a field set in one run is not seen in the next run', async () => {
    class Once extends Node<Shared> {
      mark: string | undefined;
      override prep(shared: Shared): void {
        shared.seen.push(this.mark);
        this.mark = 'set';
      }
    }
    const node = new Once();
    const flow = new Flow(node);
    const shared: Shared = { visits: 0, seen: [] };
    await flow.run(shared);
    await flow.run(shared);
    expect(shared.seen).toEqual([undefined, undefined]);
    expect(node.mark).toBeUndefined();
  });

  it('the copy of one visit is not the copy of the next (distinct objects, same template)', async () => {
    const copies: object[] = [];
    class Loop extends Node<Shared> {
      override prep(): void {
        copies.push(this);
      }
      override post(shared: Shared): string | undefined {
        return ++shared.visits < 2 ? 'again' : undefined;
      }
    }
    const loop = new Loop();
    loop.on('again', loop);
    await new Flow(loop).run({ visits: 0, seen: [] });
    expect(copies).toHaveLength(2);
    expect(copies[0]).not.toBe(loop);
    expect(copies[1]).not.toBe(loop);
    expect(copies[0]).not.toBe(copies[1]);
    expect(copies[0]).toBeInstanceOf(Loop);
  });

  it('fields set in concurrent branches do not leak between them', async () => {
    const gate = deferred();
    let started = 0;
    class Remember extends Node<Shared, { i: number }> {
      mine: number | undefined;
      override prep(): void {
        this.mine = this.params.i;
        if (++started === 3) gate.resolve();
      }
      override async exec(): Promise<void> {
        // All three branches have set `mine` before any of them reads it back.
        await within(gate.promise, 30_000, 'branches did not overlap');
      }
      override post(shared: Shared): void {
        shared.seen.push([this.params.i, this.mine]);
      }
    }
    class Fan extends ParallelBatchFlow<Shared> {
      override prep(): NonIterableObject[] {
        return [{ i: 1 }, { i: 2 }, { i: 3 }];
      }
    }
    const shared: Shared = { visits: 0, seen: [] };
    await new Fan(new Remember()).run(shared);
    expect(shared.seen).toHaveLength(3);
    expect(shared.seen).toEqual(
      expect.arrayContaining([
        [1, 1],
        [2, 2],
        [3, 3],
      ]),
    );
  });

  it("the flow's params replace the params of each visited copy; the template keeps its own", async () => {
    class Record extends Node<Shared> {
      override prep(shared: Shared): void {
        shared.seen.push(this.params);
      }
    }
    const a = new Record();
    const b = new Record();
    a.setParams({ own: 'a', shared: 'template' });
    b.setParams({ own: 'b' });
    a.next(b);
    const flow = new Flow<Shared>(a);
    flow.setParams({ shared: 'flow', x: 1 });
    const shared: Shared = { visits: 0, seen: [] };
    await flow.run(shared);
    expect(shared.seen).toEqual([
      { shared: 'flow', x: 1 },
      { shared: 'flow', x: 1 },
    ]);
    expect(a.params).toEqual({ own: 'a', shared: 'template' });
    expect(b.params).toEqual({ own: 'b' });
  });

  it('a flow with no params gives each visited copy empty params', async () => {
    class Record extends Node<Shared> {
      override prep(shared: Shared): void {
        shared.seen.push(this.params);
      }
    }
    const a = new Record();
    a.setParams({ own: true });
    const shared: Shared = { visits: 0, seen: [] };
    await new Flow<Shared>(a).run(shared);
    expect(shared.seen).toEqual([{}]);
  });

  it('nested flows: the outer params replace the inner flow’s params and reach its nodes', async () => {
    class Record extends Node<Shared> {
      constructor(private readonly tag: string) {
        super();
      }
      override prep(shared: Shared): void {
        shared.seen.push([this.tag, this.params]);
      }
    }
    class RecordingFlow extends Flow<Shared> {
      override prep(shared: Shared): void {
        shared.seen.push(['inner flow', this.params]);
      }
    }
    const leaf = new Record('leaf');
    leaf.setParams({ leafOwn: true });
    const inner = new RecordingFlow(leaf);
    inner.setParams({ innerOwn: true });
    const before = new Record('before');
    before.next(inner);
    const outer = new Flow<Shared>(before);
    outer.setParams({ outer: 1 });
    const shared: Shared = { visits: 0, seen: [] };
    await outer.run(shared);
    expect(shared.seen).toEqual([
      ['before', { outer: 1 }],
      ['inner flow', { outer: 1 }],
      ['leaf', { outer: 1 }],
    ]);
    expect(inner.params).toEqual({ innerOwn: true });
    expect(leaf.params).toEqual({ leafOwn: true });
  });

  it('a mutable object held by the template IS shared by every copy (as in the reference)', async () => {
    class Collect extends Node<Shared> {
      readonly history: number[] = [];
      override prep(shared: Shared): void {
        this.history.push(shared.visits);
      }
      override post(shared: Shared): string | undefined {
        return ++shared.visits < 3 ? 'again' : undefined;
      }
    }
    const node = new Collect();
    node.on('again', node);
    const flow = new Flow(node);
    await flow.run({ visits: 0, seen: [] });
    // Every visit pushed into the template's array: the copy is shallow.
    expect(node.history).toEqual([0, 1, 2]);
    await flow.run({ visits: 0, seen: [] });
    expect(node.history).toEqual([0, 1, 2, 0, 1, 2]);
  });

  it('a visit reads the fields its template has when it runs; what it sets stays on the copy', async () => {
    class Label extends Node<Shared> {
      label = 'first';
      override prep(shared: Shared): void {
        shared.seen.push(this.label);
        this.label = 'set by the visit';
      }
    }
    const node = new Label();
    const flow = new Flow(node);
    const shared: Shared = { visits: 0, seen: [] };
    await flow.run(shared);
    node.label = 'second';
    await flow.run(shared);
    expect(shared.seen).toEqual(['first', 'second']);
    expect(node.label).toBe('second');
  });

  it('a node that overrides clone() is visited on what its clone() returns', async () => {
    class Own extends Node<Shared> {
      items: number[] = [];
      override clone(): this {
        const copy = super.clone();
        copy.items = [...this.items]; // a per-visit array, unlike the default shallow copy
        return copy;
      }
      override prep(shared: Shared): void {
        this.items.push(shared.visits);
        shared.seen.push([...this.items]);
      }
      override post(shared: Shared): string | undefined {
        return ++shared.visits < 2 ? 'again' : undefined;
      }
    }
    const node = new Own();
    node.on('again', node);
    const shared: Shared = { visits: 0, seen: [] };
    await new Flow(node).run(shared);
    expect(shared.seen).toEqual([[0], [1]]);
    expect(node.items).toEqual([]);
  });

  it('clone(): same prototype, own fields copied, params copied one level, successors shared', () => {
    class N extends Node<Shared> {
      field = 'x';
      readonly obj = { deep: 1 };
    }
    const n = new N(3, 0.5);
    const next = new N();
    n.next(next);
    n.setParams({ p: 1, nested: { q: 1 } });
    const copy = n.clone();
    expect(Object.getPrototypeOf(copy)).toBe(N.prototype);
    expect(copy).not.toBe(n);
    expect(copy.field).toBe('x');
    expect(copy.maxRetries).toBe(3);
    expect(copy.wait).toBe(0.5);
    expect(copy.obj).toBe(n.obj);
    expect(copy.params).toEqual(n.params);
    expect(copy.params).not.toBe(n.params);
    expect(copy.params.nested).toBe(n.params.nested);
    expect(copy.getNextNode()).toBe(next);
    copy.field = 'changed';
    copy.setParams({ p: 2 });
    expect(n.field).toBe('x');
    expect(n.params).toEqual({ p: 1, nested: { q: 1 } });
  });
});
