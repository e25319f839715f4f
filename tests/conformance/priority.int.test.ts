/**
 * Contract: `RunOptions.priority` (BullMQ's meaning) orders waiting steps on both engines: a run
 * without one first, then 1, 2, 3...; every step of a run carries its priority, and so do its
 * fan-out children.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject } from '@queueflow/runtime';
import { gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine, type EngineHarness } from './engine-harness.js';

type S = { token: string; label: string };

const execs = new Tally<string>();
const gates = new Map<string, Gate>();

/** Records `<label>.<node>` when its exec runs; the `hold` node waits for the token's gate. */
class Step extends Node<S> {
  override prep(shared: S): S {
    return shared;
  }
  override async exec({ token, label }: S): Promise<void> {
    execs.add(token, `${label}.${this.name!}`);
    if (this.name === 'hold') await gates.get(token)?.promise;
  }
}

const hold = defineFlow('hold', () => new Flow(new Step({ name: 'hold' })));
const twoSteps = defineFlow('two-steps', () => {
  const a = new Step({ name: 'a' });
  a.next(new Step({ name: 'b' }));
  return new Flow(a);
});

class Children extends ParallelBatchFlow<S> {
  override prep(): JsonObject[] {
    return [{ n: 1 }, { n: 2 }];
  }
}
const fanOut = defineFlow('fan-out-priority', () => new Children(new Step({ name: 'child' })));

/**
 * On a store of several partitions, priority orders the steps of one partition (its BullMQ
 * queue); across partitions a worker orders only the steps it has fetched, each partition's next
 * (README "Scaling out"). To check the exact order there, the runs are put in partition 0: a run
 * with an idempotency key lives in the partition of that key (RedisRunStore.placeRun).
 */
function onePartition(h: EngineHarness, label: string): { idempotencyKey?: string } {
  const partitions = h.redis?.partitions;
  if (!partitions || partitions.count === 1) return {};
  for (let n = 0; ; n++) {
    const key = `${label}.${n}`;
    if (partitions.indexOfAddress(`idempotency:${key}`) === 0) return { idempotencyKey: key };
  }
}

describe.each(engines)('priority on %s', (name) => {
  const setup = useEngine(name);

  it('runs waiting steps unprioritized first, then by priority, every step of a run with its priority', async () => {
    const h = await setup('priority-order', { flows: [hold, twoSteps], concurrency: 1 });
    const token = `order-${name}`;
    gates.set(token, gate());
    // The one slot is busy while the others queue up.
    const busy = await h.engine.start(hold, { token, label: 'gate' }, onePartition(h, `${token}.gate`));
    await waitFor('the gate step to run', () => execs.of(token).includes('gate.hold'));
    const started = [];
    for (const [label, priority] of [
      ['p3', 3],
      ['p1', 1],
      ['none', undefined],
      ['p2', 2],
    ] as const) {
      const options = { ...(priority === undefined ? {} : { priority }), ...onePartition(h, `${token}.${label}`) };
      started.push(await h.engine.start(twoSteps, { token, label }, options));
    }
    gates.get(token)!.open();
    await busy.result();
    for (const handle of started) expect((await handle.result()).status).toBe('completed');
    // A run's second step is added as its first commits, with the run's priority: it goes
    // before the first steps of runs with a lower priority (a higher number).
    expect(execs.of(token)).toEqual(['gate.hold', 'none.a', 'none.b', 'p1.a', 'p1.b', 'p2.a', 'p2.b', 'p3.a', 'p3.b']);
    expect((await h.engine.get(started[1]!.id))?.priority).toBe(1);
    expect((await h.engine.get(started[2]!.id))?.priority).toBeUndefined();
  });

  it("gives a fan-out's child runs their parent's priority", async () => {
    const h = await setup('priority-children', { flows: [fanOut] });
    const token = `children-${name}`;
    const handle = await h.engine.start(fanOut, { token, label: 'c' }, { priority: 7 });
    expect((await handle.result()).status).toBe('completed');
    const children = await h.engine.children(handle.id);
    expect(children).toHaveLength(2);
    for (const child of children) expect((await h.engine.get(child.runId!))?.priority).toBe(7);
  });

  it('refuses a priority outside BullMQ range with INVALID_OPTION', async () => {
    const h = await setup('priority-invalid', { flows: [twoSteps], workers: 0 });
    for (const priority of [0, -1, 1.5, 2 ** 21, Number.NaN]) {
      await expect(h.engine.start(twoSteps, { token: 'x', label: 'x' }, { priority })).rejects.toMatchObject({
        code: 'INVALID_OPTION',
        message: expect.stringContaining('expected `priority` to be an integer from 1 (runs first) to 2097151'),
      });
    }
    expect(await h.engine.list()).toEqual([]);
  });
});
