/**
 * Contract: what live views read (DESIGN "Operating runs"): a fan-out's children with their
 * statuses (`children`), changes of runs as they happen (`watch`), a flow's graph (`graph`),
 * paging through runs (`list` with `offset`), and the live workers (`workers`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  defineFlow,
  Flow,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type ChildSummary,
  type RunChange,
} from '@queueflow/runtime';
import { gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const execs = new Tally<number>();
const gates = new Map<string, Gate>();

function gateOf(key: string): Gate {
  let found = gates.get(key);
  if (!found) gates.set(key, (found = gate()));
  return found;
}

/** Counts its exec by index, then waits for the gate `<token>:<i>`. */
async function held(token: string, i: number): Promise<number> {
  execs.add(token, i);
  await gateOf(`${token}:${i}`).promise;
  return i;
}

class Fan extends ParallelBatchFlow<S> {
  override prep(shared: S): object[] {
    return Array.from({ length: shared.children as number }, (_, i) => ({ i }));
  }
}
class Child extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): Promise<number> {
    return held(token, this.params.i as number);
  }
  override post(shared: S, _prep: unknown, i: number): void {
    shared[`c${i}`] = true;
  }
}
const fan = defineFlow(
  'views-fan',
  () => new Flow(new Fan(new Child({ name: 'child' }), { name: 'fan', concurrency: 2 })),
);

class Items extends ParallelBatchNode<S> {
  override prep(shared: S): { token: string; i: number }[] {
    return Array.from({ length: shared.children as number }, (_, i) => ({ token: shared.token as string, i }));
  }
  override exec(item: { token: string; i: number }): Promise<number> {
    return held(item.token, item.i);
  }
  override post(shared: S, _prep: unknown, values: number[]): void {
    shared.values = values;
  }
}
const items = defineFlow('views-items', () => new Flow(new Items({ name: 'items', concurrency: 2 })));

class Mark extends Node<S> {
  override post(shared: S): string {
    shared[this.name!] = true;
    return 'default';
  }
}
const abc = defineFlow('views-abc', () => {
  const a = new Mark({ name: 'a' });
  a.next(new Mark({ name: 'b' })).next(new Mark({ name: 'c' }));
  return new Flow(a);
});
const other = defineFlow('views-other', () => new Flow(new Mark({ name: 'other' })));
/** Holds its exec on the gate `<token>:0`. */
class Hold extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): Promise<number> {
    return held(token, 0);
  }
}
const hold = defineFlow('views-hold', () => new Flow(new Hold({ name: 'hold' })));

const flows = [fan, items, abc, other, hold];

/** Index and status of each child. */
const statuses = (children: ChildSummary[]): [number, string][] => children.map((c) => [c.index, c.status]);

describe.each(engines)('%s: live views', (name) => {
  const setup = useEngine(name);
  // Registered after the engine's own cleanup, so it runs first: no exec waits on a gate then.
  afterEach(() => {
    for (const open of gates.values()) open.open();
  });

  it("children: a ParallelBatchFlow's child runs in index order, each with its status", async () => {
    const { engine, until } = await setup('views-children', { flows, concurrency: 4 });
    const token = `children-${name}`;
    const handle = await engine.start<S>(fan, { token, children: 4 });
    await waitFor('children 0 and 1 to be in exec', () => execs.count(token) === 2);
    const waiting = await until(handle.id, 'the parent to wait', (info) => info.status === 'waiting');

    let children = await engine.children(handle.id);
    expect(statuses(children)).toEqual([
      [0, 'running'],
      [1, 'running'],
      [2, 'queued'],
      [3, 'queued'],
    ]);
    expect(children.map((c) => c.runId)).toEqual([0, 1, 2, 3].map((i) => `${handle.id}.${waiting.steps}.${i}`));
    expect(children[0]!.startedAt).toEqual(expect.any(Number));
    expect(children[2]!.startedAt).toBeUndefined();

    gateOf(`${token}:0`).open(); // child 0 completes; child 2 takes its place
    await waitFor('child 2 to be in exec', () => execs.of(token).includes(2));
    children = await engine.children(handle.id);
    expect(statuses(children)).toEqual([
      [0, 'completed'],
      [1, 'running'],
      [2, 'running'],
      [3, 'queued'],
    ]);
    expect(children[0]!.finishedAt).toBeGreaterThanOrEqual(children[0]!.startedAt!);
    expect(statuses(await engine.children(handle.id, { offset: 1, limit: 2 }))).toEqual([
      [1, 'running'],
      [2, 'running'],
    ]);

    for (const i of [1, 2, 3]) gateOf(`${token}:${i}`).open();
    expect((await handle.result()).status).toBe('completed');
    // After the fan-in, the children are still listed; a child's own state went with the snapshot.
    expect(statuses(await engine.children(handle.id))).toEqual([0, 1, 2, 3].map((i) => [i, 'completed']));
    await expect(engine.history(`${handle.id}.${waiting.steps}.0`)).rejects.toMatchObject({
      code: 'RUN_NOT_FOUND',
      message: expect.stringContaining('has merged'),
    });
  });

  it("children: a ParallelBatchNode's items, without run ids", async () => {
    const { engine, until } = await setup('views-items', { flows, concurrency: 4 });
    const token = `items-${name}`;
    const handle = await engine.start<S>(items, { token, children: 3 });
    await waitFor('items 0 and 1 to be in exec', () => execs.count(token) === 2);
    await until(handle.id, 'the parent to wait', (info) => info.status === 'waiting');
    expect(await engine.children(handle.id)).toEqual([
      { index: 0, status: 'running' },
      { index: 1, status: 'running' },
      { index: 2, status: 'queued' },
    ]);

    gateOf(`${token}:1`).open();
    await until(handle.id, 'item 1 to end', (info) => info.children?.ended === 1);
    expect(statuses(await engine.children(handle.id))).toEqual([
      [0, 'running'],
      [1, 'completed'],
      [2, 'running'],
    ]);
    for (const i of [0, 2]) gateOf(`${token}:${i}`).open();
    expect((await handle.result()).shared.values).toEqual([0, 1, 2]);
    expect(statuses(await engine.children(handle.id))).toEqual([0, 1, 2].map((i) => [i, 'completed']));
  });

  it('children: none for a run without a fan-out, or an unknown run', async () => {
    const { engine } = await setup('views-no-children', { flows });
    const result = await engine.run<S>(abc, {});
    expect(await engine.children(result.id)).toEqual([]);
    expect(await engine.children('no-such-run')).toEqual([]);
  });

  it("watch: a run's changes arrive as its steps commit and as it ends; unsubscribing stops them", async () => {
    const { engine } = await setup('views-watch', { flows });
    const seen: RunChange[] = [];
    const unwatch = await engine.watch((change) => seen.push(change));
    const result = await engine.run<S>(abc, {});
    expect(result.status).toBe('completed');
    await waitFor('the end to be seen', () => seen.some((c) => c.runId === result.id && c.status === 'completed'));

    const mine = seen.filter((change) => change.runId === result.id);
    expect(mine[0]).toEqual({ runId: result.id, status: 'queued', steps: 0 });
    expect(mine.at(-1)).toEqual({ runId: result.id, status: 'completed', steps: 3 });
    for (const steps of [1, 2]) expect(mine).toContainEqual({ runId: result.id, status: 'running', steps });
    mine.slice(1).forEach((change, i) => expect(change.steps).toBeGreaterThanOrEqual(mine[i]!.steps));

    // After unsubscribing, a listener still subscribed sees the next run end; the first does not.
    unwatch();
    const count = seen.length;
    const later: RunChange[] = [];
    await engine.watch((change) => later.push(change));
    const next = await engine.run<S>(abc, {});
    await waitFor('the next run to be seen', () => later.some((c) => c.runId === next.id && c.status === 'completed'));
    expect(seen).toHaveLength(count);
  });

  it('watch: a fan-out parent changes to waiting, and as its children end', async () => {
    const { engine } = await setup('views-watch-fan', { flows, concurrency: 4 });
    const token = `watch-fan-${name}`;
    const seen: RunChange[] = [];
    await engine.watch((change) => seen.push(change));
    const handle = await engine.start<S>(fan, { token, children: 2 });
    await waitFor('the parent to wait', () => seen.some((c) => c.runId === handle.id && c.status === 'waiting'));
    for (const i of [0, 1]) gateOf(`${token}:${i}`).open();
    await handle.result();
    await waitFor('the end to be seen', () => seen.some((c) => c.runId === handle.id && c.status === 'completed'));
    // Children are seen through their parent only.
    expect(seen.every((change) => !change.runId.startsWith(`${handle.id}.`))).toBe(true);
  });

  it("graph: a registered flow's nodes, successors and Mermaid; undefined for an unknown flow", async () => {
    const { engine } = await setup('views-graph', { flows });
    const graph = await engine.graph('views-abc');
    expect(graph).toBeDefined();
    expect(graph!.flow).toBe('views-abc');
    const ids = graph!.nodes.map((node) => node.id);
    expect(ids).toContain(graph!.root);
    expect(graph!.nodes.filter((node) => node.kind === 'node')).toEqual([
      { id: 'a', kind: 'node', successors: { default: 'b' } },
      { id: 'b', kind: 'node', successors: { default: 'c' } },
      { id: 'c', kind: 'node', successors: {} },
    ]);
    expect(graph!.nodes.find((node) => node.id === graph!.root)).toMatchObject({ kind: 'flow', start: 'a' });
    expect(graph!.mermaid).toMatch(/^flowchart TD\n/);
    expect(Object.keys(graph!.mermaidIds).sort()).toEqual([...ids].sort());
    for (const mermaidId of Object.values(graph!.mermaidIds)) expect(graph!.mermaid).toContain(mermaidId);
    expect(graph!.mermaid).toContain(`${graph!.mermaidIds.a} --> ${graph!.mermaidIds.b}`);

    const fanGraph = await engine.graph('views-fan');
    expect(fanGraph!.nodes.find((node) => node.id === 'fan')).toMatchObject({
      kind: 'parallel-batch-flow',
      start: 'child',
    });
    expect(await engine.graph('no-such-flow')).toBeUndefined();
  });

  it('list: offset pages through the runs, filters first', async () => {
    const { engine } = await setup('views-list', { flows });
    for (let i = 0; i < 3; i++) {
      await engine.run<S>(abc, { i });
      await engine.run<S>(other, { i });
    }
    const all = await engine.list();
    expect(all).toHaveLength(6);
    const pages = [
      await engine.list({ limit: 2 }),
      await engine.list({ limit: 2, offset: 2 }),
      await engine.list({ limit: 2, offset: 4 }),
    ];
    expect(pages.map((page) => page.length)).toEqual([2, 2, 2]);
    expect(pages.flat().map((run) => run.id)).toEqual(all.map((run) => run.id));
    expect(await engine.list({ offset: 6 })).toEqual([]);

    const abcRuns = await engine.list({ flow: 'views-abc' });
    expect(abcRuns.map((run) => run.flow)).toEqual(['views-abc', 'views-abc', 'views-abc']);
    expect((await engine.list({ flow: 'views-abc', offset: 1, limit: 1 })).map((run) => run.id)).toEqual([
      abcRuns[1]!.id,
    ]);
    expect((await engine.list({ status: 'completed', offset: 5 })).map((run) => run.id)).toEqual([all[5]!.id]);
  });

  it('workers: the live workers with their flows, queues, concurrency and steps running', async () => {
    const { engine, redis } = await setup('views-workers', { flows, concurrency: 3 });
    const flowNames = flows.map((flow) => flow.name).sort();
    const [first] = await engine.workers();
    expect(first).toMatchObject({ pid: process.pid, concurrency: 3, active: 0, queues: ['default'] });
    expect([...first!.flows].sort()).toEqual(flowNames);
    expect(Object.keys(first!).sort()).toEqual(
      ['id', 'host', 'pid', 'concurrency', 'active', 'flows', 'queues', 'startedAt', 'lastSeenAt'].sort(),
    );
    expect(first!.lastSeenAt).toBeGreaterThanOrEqual(first!.startedAt);

    const token = `workers-${name}`;
    const handle = await engine.start<S>(hold, { token });
    await waitFor('the step to be in exec', () => execs.count(token) === 1);
    // RedisEngine reads `active` from the heartbeats, every 2 s.
    await waitFor('the worker to report a step running', async () =>
      (await engine.workers()).some((worker) => worker.active === 1),
    );
    gateOf(`${token}:0`).open();
    await handle.result();

    if (redis) {
      expect((await engine.workers()).map((worker) => worker.id)).toEqual([first!.id]);
      const second = await redis.worker({ concurrency: 5 });
      const both = await engine.workers();
      expect(both).toHaveLength(2);
      const added = both.find((worker) => worker.id !== first!.id)!;
      expect(added).toMatchObject({ pid: process.pid, concurrency: 5 });
      expect(added.id).toMatch(new RegExp(`^[^:]+:${process.pid}:[^:]+$`));
      await second.close(); // a clean stop leaves the registry at once
      expect((await engine.workers()).map((worker) => worker.id)).toEqual([first!.id]);
    } else {
      expect(first!.id).toContain(String(process.pid));
    }
  });
});
