/**
 * S9: BatchFlow: prep returns a list of param objects (null/undefined is an empty list); the walk
 * runs once per object, in order, with params {...flow.params, ...object}; post(shared, list,
 * undefined) follows, and by default returns undefined, so a parent continues on "default".
 * Batch flows nest, params merging outward-in (outer flow params, then outer item, then inner
 * item).
 */
import { describe, expect, it } from 'vitest';
import { BatchFlow, Flow, Node, type NonIterableObject } from '../src/index.js';
import { captureWarnings } from './helpers.js';

interface Shared {
  list?: NonIterableObject[] | null | undefined;
  log: unknown[];
}

/** Records the params of its visit in shared.log. */
class Record extends Node<Shared> {
  constructor(
    private readonly tag = 'node',
    private readonly action?: string,
  ) {
    super();
  }
  override prep(shared: Shared): void {
    shared.log.push([this.tag, this.params]);
  }
  override post(): string | undefined {
    return this.action;
  }
}

class ListFlow extends BatchFlow<Shared> {
  override prep(shared: Shared): NonIterableObject[] | null | undefined {
    return shared.list;
  }
}

describe('S9 BatchFlow', () => {
  const warnings = captureWarnings();

  it('walks once per param object, in order, with {...flow.params, ...object}', async () => {
    const a = new Record('a');
    a.next(new Record('b'));
    const flow = new ListFlow(a);
    flow.setParams({ base: 'flow', k: 'flow' });
    const shared: Shared = { list: [{ k: 1 }, { k: 2, extra: true }, {}], log: [] };
    await flow.run(shared);
    expect(shared.log).toEqual([
      ['a', { base: 'flow', k: 1 }],
      ['b', { base: 'flow', k: 1 }],
      ['a', { base: 'flow', k: 2, extra: true }],
      ['b', { base: 'flow', k: 2, extra: true }],
      ['a', { base: 'flow', k: 'flow' }],
      ['b', { base: 'flow', k: 'flow' }],
    ]);
  });

  it('does not modify the param objects nor the flow params', async () => {
    const flow = new ListFlow(new Record());
    flow.setParams({ base: 1 });
    const list = [{ k: 1 }, { k: 2 }];
    await flow.run({ list, log: [] });
    expect(list).toEqual([{ k: 1 }, { k: 2 }]);
    expect(flow.params).toEqual({ base: 1 });
  });

  it('post(shared, list, undefined) runs after every walk', async () => {
    const postArgs: unknown[][] = [];
    class Observed extends ListFlow {
      override post(shared: Shared, prepRes: unknown, execRes: unknown): void {
        shared.log.push('post');
        postArgs.push([shared, prepRes, execRes]);
      }
    }
    const list = [{ k: 1 }, { k: 2 }];
    const shared: Shared = { list, log: [] };
    await new Observed(new Record('n', 'walk-action')).run(shared);
    expect(shared.log).toEqual([['n', { k: 1 }], ['n', { k: 2 }], 'post']);
    expect(postArgs).toHaveLength(1);
    expect(postArgs[0]?.[0]).toBe(shared);
    expect(postArgs[0]?.[1]).toBe(list);
    expect(postArgs[0]?.[2]).toBeUndefined();
    expect(postArgs[0]).toHaveLength(3);
  });

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['[]', []],
  ])('an empty list (%s): no walk, post still runs with an empty list', async (_name, list) => {
    const postArgs: unknown[] = [];
    class Observed extends ListFlow {
      override post(_s: Shared, prepRes: unknown, execRes: unknown): void {
        postArgs.push(prepRes, execRes);
      }
    }
    const shared: Shared = { list, log: [] };
    await new Observed(new Record()).run(shared);
    expect(shared.log).toEqual([]);
    expect(postArgs).toEqual([[], undefined]);
  });

  it('the default post returns undefined whatever the walks ended on: run returns undefined', async () => {
    const flow = new ListFlow(new Record('n', 'walk-action'));
    expect(await flow.run({ list: [{ k: 1 }], log: [] })).toBeUndefined();
  });

  it('a parent continues on "default" after a batch flow, even if its walks ended on another action', async () => {
    const batch = new ListFlow(new Record('inner', 'special'));
    batch.next(new Record('after default'));
    batch.on('special', new Record('after special'));
    const shared: Shared = { list: [{ k: 1 }, { k: 2 }], log: [] };
    const last = await new Flow(batch).run(shared);
    expect(shared.log).toEqual([
      ['inner', { k: 1 }],
      ['inner', { k: 2 }],
      ['after default', {}],
    ]);
    expect(last).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('refuses a prep result that is not a list of plain objects', async () => {
    class Bad extends BatchFlow<Shared> {
      constructor(private readonly value: unknown) {
        super(new Record());
      }
      override prep(): unknown {
        return this.value;
      }
    }
    await expect(new Bad('abc').run({ log: [] })).rejects.toThrow(TypeError);
    await expect(new Bad([{ ok: 1 }, 5]).run({ log: [] })).rejects.toThrow(/index 1/);
  });

  it('a failing walk fails the batch flow: later walks and post do not run', async () => {
    class Fails extends Node<Shared> {
      override prep(shared: Shared): void {
        shared.log.push(this.params);
        if (this.params.k === 2) throw new Error('walk 2 failed');
      }
    }
    class Observed extends ListFlow {
      override post(shared: Shared): void {
        shared.log.push('post');
      }
    }
    const shared: Shared = { list: [{ k: 1 }, { k: 2 }, { k: 3 }], log: [] };
    await expect(new Observed(new Fails()).run(shared)).rejects.toThrow('walk 2 failed');
    expect(shared.log).toEqual([{ k: 1 }, { k: 2 }]);
  });

  it('nested batch flows merge params outward-in: outer flow params, outer item, inner item', async () => {
    class Outer extends BatchFlow<Shared> {
      override prep(): NonIterableObject[] {
        return [
          { file: 'f1', level: 'outer item' },
          { file: 'f2', level: 'outer item' },
        ];
      }
    }
    class Inner extends BatchFlow<Shared> {
      override prep(): NonIterableObject[] {
        return [{ chunk: 1, level: 'inner item' }, { chunk: 2 }];
      }
    }
    const inner = new Inner(new Record('leaf'));
    inner.setParams({ ignored: 'inner template params are replaced' });
    const outer = new Outer(inner);
    outer.setParams({ run: 'r1', level: 'outer flow', file: 'none' });
    const shared: Shared = { log: [] };
    await outer.run(shared);
    expect(shared.log).toEqual([
      ['leaf', { run: 'r1', level: 'inner item', file: 'f1', chunk: 1 }],
      ['leaf', { run: 'r1', level: 'outer item', file: 'f1', chunk: 2 }],
      ['leaf', { run: 'r1', level: 'inner item', file: 'f2', chunk: 1 }],
      ['leaf', { run: 'r1', level: 'outer item', file: 'f2', chunk: 2 }],
    ]);
  });

  it('a batch flow nested in a plain flow merges that flow’s params with its items', async () => {
    const batch = new ListFlow(new Record('leaf'));
    const parent = new Flow<Shared>(batch);
    parent.setParams({ from: 'parent', k: 0 });
    const shared: Shared = { list: [{ k: 1 }], log: [] };
    await parent.run(shared);
    expect(shared.log).toEqual([['leaf', { from: 'parent', k: 1 }]]);
  });
});
