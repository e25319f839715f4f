/**
 * Contract: large values in `shared` (the claim check, issue 17 item 4). A value whose JSON is
 * over `largeValueBytes` is stored once, apart, and referred to from checkpoints, step records,
 * fan-out snapshots and children's deltas; nothing a flow or a client sees changes: results,
 * `get`, `history`, `sharedAt`, `fork` and fan-in merges give the values themselves, on both
 * engines. On Redis, each distinct large value is one key, however many runs, steps and children
 * hold it.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, ParallelBatchNode } from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const LIMIT = 1024;
/** Values over the limit, each distinct. */
const big = (tag: string): string => `${tag}:${'x'.repeat(4000)}`;

/** `a` replaces the large `blob` with another; `b` adds a small field and a large one. */
class Replace extends Node<S> {
  override post(shared: S): void {
    shared.blob = big('second');
  }
}
class Add extends Node<S> {
  override post(shared: S): void {
    shared.small = (shared.blob as string).length;
    shared.nested = { doc: big('nested'), note: 'small' };
  }
}
const steps = defineFlow('large-values-steps', () => {
  const a = new Replace({ name: 'a' });
  a.next(new Add({ name: 'b' }));
  return new Flow(a);
});

/** Three children read the large `blob` of their parent; child 0 writes a large value of its own. */
class Fan extends ParallelBatchFlow<S> {
  override prep(): object[] {
    return [{ i: 0 }, { i: 1 }, { i: 2 }];
  }
}
class Child extends Node<S> {
  override post(shared: S): void {
    const i = this.params.i as number;
    shared[`seen${i}`] = (shared.blob as string).length;
    if (i === 0) shared.fromChild = big('child');
  }
}
const fan = defineFlow('large-values-fan', () => new Flow(new Fan(new Child({ name: 'child' }), { name: 'fan' })));

/**
 * A ParallelBatchNode over a list of items larger than the limit: its fan-out step keeps the
 * list (its `prep` result) in the run's frames until its fan-in, where `post` gets it back.
 */
class ManyItems extends ParallelBatchNode<S> {
  override prep(shared: S): number[] {
    return Array.from({ length: shared.n as number }, (_, i) => i);
  }
  override exec(item: number): number {
    return item * 2;
  }
  override post(shared: S, items: number[], results: number[]): void {
    shared.items = items.length;
    shared.sum = results.reduce((a, b) => a + b, 0);
  }
}
const many = defineFlow('large-values-items', () => new Flow(new ManyItems({ name: 'items', concurrency: 50 })));

const flows = [steps, fan, many];

describe.each(engines)('%s: large values in shared', (name) => {
  const setup = useEngine(name);

  it('gives back the values themselves: result, get, history, sharedAt', async () => {
    const h = await setup('large-values-steps', { flows, largeValueBytes: LIMIT });
    const result = await h.engine.run<S>(steps, { blob: big('first') });

    expect(result.status).toBe('completed');
    expect(result.shared).toEqual({
      blob: big('second'),
      small: big('second').length,
      nested: { doc: big('nested'), note: 'small' },
    });
    expect((await h.engine.get(result.id))?.shared).toEqual(result.shared);
    expect(await h.engine.sharedAt(result.id, 0)).toEqual({ blob: big('first') });
    expect(await h.engine.sharedAt(result.id, 1)).toEqual({ blob: big('second') });
    const history = await h.engine.history(result.id);
    expect(history.map((record) => record.patch)).toEqual([
      [{ op: 'replace', path: '/blob', value: big('second') }],
      [
        { op: 'add', path: '/small', value: big('second').length },
        { op: 'add', path: '/nested', value: { doc: big('nested'), note: 'small' } },
      ],
    ]);
  });

  it('forks from a step whose shared held a large value another step replaced', async () => {
    const h = await setup('large-values-fork', { flows, largeValueBytes: LIMIT });
    const source = await h.engine.run<S>(steps, { blob: big('first') });
    const fork = await h.engine.fork(source.id, { step: 0, patch: [{ op: 'add', path: '/extra', value: 1 }] });
    const result = await fork.result();

    expect(result.status).toBe('completed');
    expect(result.shared).toEqual({ ...source.shared, extra: 1 });
  });

  it("children read the parent's large values and merge large values of their own", async () => {
    const h = await setup('large-values-fan', { flows, largeValueBytes: LIMIT, concurrency: 3 });
    const result = await h.engine.run<S>(fan, { blob: big('parent') });

    expect(result.status).toBe('completed');
    expect(result.shared).toEqual({
      blob: big('parent'),
      seen0: big('parent').length,
      seen1: big('parent').length,
      seen2: big('parent').length,
      fromChild: big('child'),
    });
  });

  it("a fan-out's large list of items is set apart too, and comes back whole to its post", async () => {
    const h = await setup('large-values-items', { flows, largeValueBytes: LIMIT, concurrency: 4 });
    const n = 600; // its JSON is well over the limit
    const result = await h.engine.run<S>(many, { n });

    expect(result.status).toBe('completed');
    expect(result.shared).toEqual({ n, items: n, sum: n * (n - 1) });
    expect((await h.engine.history(result.id)).map((record) => record.node)).toEqual(['items', 'items']);
    expect(await h.engine.sharedAt(result.id, 1)).toEqual({ n });
    if (h.redis) {
      // The list is one value key; no run record holds it whole.
      const keys = await h.stored();
      expect(keys.filter((key) => /:value:[0-9a-f]{64}$/.test(key))).toHaveLength(1);
      expect(keys.filter((key) => key.includes(':value-staged:'))).toEqual([]);
    }
  });

  it('keeps the same values whole without the claim check (largeValueBytes: Infinity)', async () => {
    const h = await setup('large-values-off', { flows, largeValueBytes: Infinity });
    const result = await h.engine.run<S>(steps, { blob: big('first') });

    expect(result.shared.blob).toBe(big('second'));
    expect(await h.engine.sharedAt(result.id, 0)).toEqual({ blob: big('first') });
    if (h.redis) expect((await h.stored()).filter((key) => key.includes(':value:'))).toEqual([]);
  });

  it.runIf(name === 'RedisEngine')('stores each distinct large value once, however many runs hold it', async () => {
    const h = await setup('large-values-once', { flows, largeValueBytes: LIMIT });
    for (let i = 0; i < 3; i++) expect((await h.engine.run<S>(steps, { blob: big('first') })).status).toBe('completed');
    await h.engine.run<S>(fan, { blob: big('first') });

    const values = (await h.stored()).filter((key) => /:value:[0-9a-f]{64}$/.test(key));
    // first, second, nested (the steps runs); child (the fan-out): one key each.
    expect(values).toHaveLength(4);
  });
});
