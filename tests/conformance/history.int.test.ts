/**
 * Contract: step history and `sharedAt` (DESIGN "Operating runs"). One record per committed step,
 * oldest first, with its node, action, tries, times and worker; each record's `patch` is the
 * RFC 6902 patch from `shared` before the step to `shared` after it, so the patches applied in
 * turn to the initial `shared` give the final one; a fan-in's record says what it merged; the
 * per-run cap drops the oldest records, and what they alone could rebuild goes with them.
 */
import { describe, expect, it } from 'vitest';
import {
  defineFlow,
  Flow,
  LocalEngine,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type JsonObject,
  type StepRecord,
} from '@queueflow/runtime';
import { RedisEngine, startWorker } from '@queueflow/worker';
import { applyPatch } from '../support/json-patch.js';
import { Tally } from '../support/node-probes.js';
import { engines, useEngine, type EngineHarness } from './engine-harness.js';

type S = Record<string, any>;

const tries = new Tally<number>();

/** Appends to a list, adds a nested object, and branches on a named action. */
class Grow extends Node<S> {
  override post(shared: S): string {
    shared.list.push('c');
    shared.nested = { a: 1, deep: { x: [1, 2] } };
    return 'more';
  }
}
/** Removes from the front of a list and deletes a key. */
class Shrink extends Node<S> {
  override post(shared: S): void {
    shared.list.shift();
    delete shared.gone;
    shared.nested.deep.x.pop();
  }
}
/** Replaces values, one with a key that needs escaping in a JSON Pointer. */
class Swap extends Node<S> {
  override post(shared: S): void {
    shared.nested = { b: [true, null] };
    shared['odd/key~'] = 'escaped';
    shared.count += 1;
  }
}
/** Changes nothing. */
class Idle extends Node<S> {}

const edits = defineFlow('history-edits', () => {
  const grow = new Grow({ name: 'grow' });
  const shrink = new Shrink({ name: 'shrink' });
  grow.on('more', shrink);
  shrink.next(new Swap({ name: 'swap' })).next(new Idle({ name: 'idle' }));
  return new Flow(grow);
});
const editsShared = (): S => ({ list: ['a', 'b'], gone: 'soon', count: 0 });

/** Fails its first two tries (50 ms apart), then succeeds. */
class Flaky extends Node<S> {
  constructor() {
    super({ name: 'flaky', maxRetries: 3, wait: 0.05 });
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): number {
    tries.add(token, this.currentRetry);
    if (this.currentRetry < 2) throw new Error(`try ${this.currentRetry} failed`);
    return this.currentRetry;
  }
  override post(shared: S, _prep: unknown, execRes: number): void {
    shared.succeededOn = execRes;
  }
}
class Mark extends Node<S> {
  override post(shared: S): void {
    shared[this.name!] = true;
  }
}
const flaky = defineFlow('history-flaky', () => {
  const first = new Mark({ name: 'first' });
  first.next(new Flaky()).next(new Mark({ name: 'last' }));
  return new Flow(first);
});

/** Three walks; each writes its own key and the same `winner` key (a conflict). */
class Fan extends ParallelBatchFlow<S> {
  override prep(): object[] {
    return [{ i: 0 }, { i: 1 }, { i: 2 }];
  }
  override post(shared: S): void {
    shared.fannedIn = true;
  }
}
class Child extends Node<S> {
  override post(shared: S): void {
    const i = this.params.i as number;
    shared.byChild = { ...(shared.byChild ?? {}), [`c${i}`]: i * 10 };
    shared.winner = i;
  }
}
const fan = defineFlow('history-fan', () => {
  const before = new Mark({ name: 'before' });
  before.next(new Fan(new Child({ name: 'child' }), { name: 'fan' })).next(new Mark({ name: 'after' }));
  return new Flow(before);
});

class Doubles extends ParallelBatchNode<S> {
  override prep(shared: S): number[] {
    return shared.numbers as number[];
  }
  override exec(n: number): number {
    return n * 2;
  }
  override post(shared: S, _prep: unknown, results: number[]): void {
    shared.doubled = results;
  }
}
const items = defineFlow('history-items', () => new Flow(new Doubles({ name: 'doubles' })));

/** Visits one node `limit` times; each visit sets `n` and appends to `seen`. */
class Tick extends Node<S> {
  override post(shared: S): string | undefined {
    shared.n += 1;
    shared.seen.push(shared.n);
    return shared.n < shared.limit ? 'again' : undefined;
  }
}
const loop = defineFlow('history-loop', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

const flows = [edits, flaky, fan, items, loop];

/** The shape every record has, whatever the step did. */
function expectWellFormed(records: StepRecord[], { name }: EngineHarness): void {
  records.forEach((record, i) => {
    expect(record.step).toBe(i);
    expect(record.tries).toBeGreaterThanOrEqual(1);
    expect(record.startedAt).toBeLessThanOrEqual(record.endedAt);
    expect(Array.isArray(record.patch)).toBe(true);
    // Who committed: LocalEngine itself; RedisEngine an in-process worker, `<host>:<pid>:<n>`.
    expect(record.worker).toContain(String(process.pid));
    if (name !== 'LocalEngine') expect(record.worker).toMatch(new RegExp(`^[^:]+:${process.pid}:[^:]+$`));
  });
}

/** The initial `shared` with every record's patch applied in turn. */
function replay(initial: JsonObject, records: StepRecord[]): JsonObject {
  return records.reduce((shared, record) => applyPatch(shared, record.patch), initial);
}

describe.each(engines)('%s: step history', (name) => {
  const setup = useEngine(name);

  it('keeps one record per committed step, oldest first, with node, action, tries, times and worker', async () => {
    const harness = await setup('history-records', { flows });
    const { engine } = harness;
    const before = Date.now();
    const result = await engine.run<S>(edits, editsShared());
    expect(result.status, JSON.stringify(result.error)).toBe('completed');

    const records = await engine.history(result.id);
    expect(records.map((r) => [r.step, r.node, r.action, r.tries])).toEqual([
      [0, 'grow', 'more', 1],
      [1, 'shrink', undefined, 1],
      [2, 'swap', undefined, 1],
      [3, 'idle', undefined, 1],
    ]);
    expectWellFormed(records, harness);
    expect((await engine.get(result.id))?.steps).toBe(records.length);
    if (name !== 'LocalEngine') {
      // Real time: the records fall inside the run.
      expect(records[0]!.startedAt).toBeGreaterThanOrEqual(before);
      expect(records.at(-1)!.endedAt).toBeLessThanOrEqual(Date.now());
    }
    records.slice(1).forEach((record, i) => expect(record.startedAt).toBeGreaterThanOrEqual(records[i]!.endedAt));
  });

  it("gives each step's forward JSON Patch: applied in turn to the initial shared, they give the final shared", async () => {
    const { engine } = await setup('history-patches', { flows });
    const initial = editsShared();
    const result = await engine.run<S>(edits, initial);
    expect(result.status, JSON.stringify(result.error)).toBe('completed');

    const records = await engine.history(result.id);
    expect(replay(initial, records)).toEqual(result.shared);
    // Each prefix of the patches gives shared as it was after that many steps.
    for (let step = 0; step <= records.length; step++) {
      expect(replay(initial, records.slice(0, step))).toEqual(await engine.sharedAt(result.id, step));
    }
    expect(records[3]!.patch).toEqual([]); // a step that changed nothing
    expect(records[2]!.patch).toContainEqual({ op: 'add', path: '/odd~1key~0', value: 'escaped' });
  });

  it('counts every try of a step that was retried: tries 3 on the record of a step that succeeded on its third', async () => {
    const harness = await setup('history-tries', { flows, autoAdvance: true });
    const { engine } = harness;
    const token = `tries-${name}`;
    const result = await engine.run<S>(flaky, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(tries.of(token)).toEqual([0, 1, 2]);

    const records = await engine.history(result.id);
    expect(records.map((r) => [r.node, r.tries])).toEqual([
      ['first', 1],
      ['flaky', 3],
      ['last', 1],
    ]);
    expectWellFormed(records, harness);
    // A record's times span the step from its first try to its commit (StepRecord.startedAt).
    const info = await engine.get(result.id);
    const firstFailure = info!.errors.find((e) => e.node === 'flaky' && e.attempt === 0);
    expect(records[1]!.startedAt).toBeLessThanOrEqual(firstFailure!.at!);
    expect(records[1]!.endedAt - records[1]!.startedAt).toBeGreaterThanOrEqual(100); // two 50 ms waits
    expect(replay({ token }, records)).toEqual(result.shared);
  });

  it("records a ParallelBatchFlow's fan-in with the children it merged and the conflicts; the patches still replay", async () => {
    const harness = await setup('history-fan', { flows });
    const { engine } = harness;
    const initial = { start: true };
    const result = await engine.run<S>(fan, initial);
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.winner).toBe(2);

    const records = await engine.history(result.id);
    expectWellFormed(records, harness);
    expect(records.at(-1)!.node).toBe('after');
    const fanIns = records.filter((record) => record.merged);
    expect(fanIns).toHaveLength(1);
    expect(fanIns[0]!.node).toBe('fan');
    expect(fanIns[0]!.merged).toEqual({ children: 3, conflicts: [{ path: '/winner', children: [0, 1, 2] }] });
    expect(replay(initial, records)).toEqual(result.shared);
    expect((await engine.get(result.id))?.conflicts).toEqual(fanIns[0]!.merged!.conflicts);
  });

  it("records a ParallelBatchNode's fan-in with its items merged", async () => {
    const harness = await setup('history-items', { flows });
    const { engine } = harness;
    const initial = { numbers: [1, 2, 3, 4] };
    const result = await engine.run<S>(items, initial);
    expect(result.status, JSON.stringify(result.error)).toBe('completed');

    const records = await engine.history(result.id);
    expectWellFormed(records, harness);
    expect(records.every((record) => record.node === 'doubles')).toBe(true);
    expect(records.at(-1)!.merged).toEqual({ children: 4, conflicts: [] });
    expect(replay(initial, records)).toEqual({ numbers: [1, 2, 3, 4], doubled: [2, 4, 6, 8] });
  });

  it('keeps only the newest maxStepRecords records; sharedAt and fork refuse the steps dropped', async () => {
    const { engine } = await setup('history-cap', { flows, maxStepRecords: 3 });
    const result = await engine.run<S>(loop, { n: 0, limit: 6, seen: [] });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect((await engine.get(result.id))?.steps).toBe(6);

    const records = await engine.history(result.id);
    expect(records.map((r) => r.step)).toEqual([3, 4, 5]);
    // The records kept still replay from the shared of the oldest step they reach.
    const at3 = await engine.sharedAt(result.id, 3);
    expect(at3).toEqual({ n: 3, limit: 6, seen: [1, 2, 3] });
    expect(replay(at3, records)).toEqual(result.shared);
    await expect(engine.sharedAt(result.id, 2)).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(engine.fork(result.id, { step: 1 })).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    const forked = await engine.fork(result.id, { step: 4 });
    expect((await forked.result()).shared).toEqual(result.shared);
  });

  it('throws RUN_NOT_FOUND for the history of an unknown run', async () => {
    const { engine } = await setup('history-unknown', { flows });
    await expect(engine.history('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });
});

describe.each(engines)('%s: sharedAt', (name) => {
  const setup = useEngine(name);

  it("gives the run's shared after each committed step, 0 being the initial shared", async () => {
    const { engine } = await setup('shared-at', { flows });
    const result = await engine.run<S>(loop, { n: 0, limit: 4, seen: [], engine: name });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    for (let step = 0; step <= 4; step++) {
      expect(await engine.sharedAt(result.id, step)).toEqual({
        n: step,
        limit: 4,
        seen: Array.from({ length: step }, (_, i) => i + 1),
        engine: name,
      });
    }
  });

  it('gives the shared before and after a fan-in', async () => {
    const { engine } = await setup('shared-at-fan', { flows });
    const result = await engine.run<S>(fan, { start: true });
    expect(result.status).toBe('completed');
    const records = await engine.history(result.id);
    const fanIn = records.findIndex((record) => record.merged);
    // After the fan-in, shared holds every child's writes; just before it, none of them.
    expect(await engine.sharedAt(result.id, fanIn + 1)).toMatchObject({ byChild: { c0: 0, c1: 10, c2: 20 } });
    expect(await engine.sharedAt(result.id, fanIn)).not.toHaveProperty('byChild');
  });

  it('throws INVALID_OPTION for a step the run has not reached, RUN_NOT_FOUND for an unknown run', async () => {
    const { engine } = await setup('shared-at-bad', { flows });
    const result = await engine.run<S>(loop, { n: 0, limit: 2, seen: [] });
    await expect(engine.sharedAt(result.id, 3)).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(engine.sharedAt(result.id, -1)).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(engine.sharedAt(result.id, 1.5)).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(engine.sharedAt('no-such-run', 0)).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });
});

describe('maxStepRecords', () => {
  it('is refused unless an integer from 1 and up, naming the option and what it got', async () => {
    const got = /expected `maxStepRecords` to be an integer from 1 and up, got/;
    for (const bad of [0, 1.5, -1]) {
      expect(() => new LocalEngine({ flows, maxStepRecords: bad })).toThrow(got);
      expect(() => new RedisEngine({ flows, maxStepRecords: bad })).toThrow(got);
      await expect(startWorker({ flows, maxStepRecords: bad })).rejects.toThrow(got);
    }
  });
});
