/**
 * Contract: what `get` and `list` say about runs (DESIGN "Clients"): status transitions, current
 * node, steps, attempts, timings, the error of a failed run; `list` newest first, filtered by
 * status and flow.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Engine, type RunInfo } from '@queueflow/runtime';
import { gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const execs = new Tally<string>();
const gates = new Map<string, Gate>();

/** Records its visit; waits for the token's gate in exec when `hold` is set. */
class Step extends Node<S> {
  constructor(
    name: string,
    private readonly hold = false,
  ) {
    super({ name });
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<void> {
    execs.add(token, this.name!);
    if (this.hold) await gates.get(token)?.promise;
  }
  override post(shared: S): string {
    shared.visited = [...((shared.visited as string[] | undefined) ?? []), this.name!];
    return 'default';
  }
}

class Boom extends Node<S> {
  constructor() {
    super({ name: 'boom', maxRetries: 3 });
  }
  override exec(): never {
    throw new Error(`boom ${this.currentRetry}`);
  }
}

function chain(name: string, ...nodes: Node<S>[]) {
  return defineFlow(name, () => {
    const built = nodes.map((node) => node.clone());
    built.reduce((a, b) => a.next(b));
    return new Flow(built[0]!);
  });
}

const holdsSecond = chain('holds-second', new Step('one'), new Step('two', true), new Step('three'));
const holdsFirst = chain('holds-first', new Step('one', true), new Step('two'));
const fails = chain('fails', new Step('one'), new Boom());
const quick = chain('quick', new Step('one'));
const flows = [holdsSecond, holdsFirst, fails, quick];

function expectTimings(info: RunInfo | undefined): void {
  expect(info?.startedAt).toBeGreaterThanOrEqual(info!.createdAt);
  expect(info?.finishedAt).toBeGreaterThanOrEqual(info!.startedAt!);
  expect(info?.updatedAt).toBeGreaterThanOrEqual(info!.startedAt!);
}

describe.each(engines)('%s: run info', (name) => {
  const setup = useEngine(name);
  // Registered after the engine's own cleanup, so it runs first (see cancellation.int.test.ts).
  afterEach(() => {
    for (const open of gates.values()) open.open();
  });

  it('goes queued → running → completed, with the current node, steps and timings', async () => {
    const { engine, advance } = await setup('info-complete', { flows, concurrency: 1 });
    const blocker = `blocker-${name}`;
    gates.set(blocker, gate());
    const busy = await engine.start(holdsFirst, { token: blocker });
    await waitFor('the only slot to be taken', () => execs.count(blocker) === 1);

    const token = `complete-${name}`;
    gates.set(token, gate());
    const handle = await engine.start(holdsSecond, { token });
    const queued = await engine.get(handle.id);
    expect(queued).toMatchObject({
      id: handle.id,
      flow: 'holds-second',
      status: 'queued',
      currentNode: 'one',
      steps: 0,
      attempts: 0,
    });
    expect(queued?.createdAt).toEqual(expect.any(Number));
    expect(queued?.startedAt).toBeUndefined();
    expect(queued?.finishedAt).toBeUndefined();
    expect(queued?.errors).toEqual([]);

    await advance(10);
    gates.get(blocker)!.open();
    await busy.result();
    await waitFor("step 'two' to be in exec", () => execs.of(token).includes('two'));
    const running = await engine.get(handle.id);
    expect(running).toMatchObject({
      status: 'running',
      currentNode: 'two',
      steps: 1,
      shared: { token, visited: ['one'] },
    });
    expect(running?.startedAt).toBeGreaterThanOrEqual(running!.createdAt);
    expect(running?.finishedAt).toBeUndefined();

    await advance(10);
    gates.get(token)!.open();
    expect(await handle.result()).toMatchObject({ status: 'completed', lastAction: 'default' });
    const completed = await engine.get(handle.id);
    expect(completed).toMatchObject({
      status: 'completed',
      steps: 3,
      lastAction: 'default',
      shared: { visited: ['one', 'two', 'three'] },
    });
    expect(completed?.currentNode).toBeUndefined();
    expect(completed?.error).toBeUndefined();
    expectTimings(completed);
  });

  it('says running, with startedAt, while the first step is in exec', async () => {
    const { engine } = await setup('info-first', { flows });
    const token = `first-${name}`;
    gates.set(token, gate());
    const handle = await engine.start(holdsFirst, { token });
    await waitFor("step 'one' to be in exec", () => execs.of(token).includes('one'));
    const info = await engine.get(handle.id);
    expect(info).toMatchObject({ status: 'running', currentNode: 'one', steps: 0 });
    expect(info?.startedAt).toBeGreaterThanOrEqual(info!.createdAt);
    gates.get(token)!.open();
    expect((await handle.result()).status).toBe('completed');
  });

  it('reports a failed run: status, the error with node and attempts, every try, timings', async () => {
    const { engine } = await setup('info-failed', { flows });
    const result = await engine.run(fails, { token: `failed-${name}` });
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ node: 'boom', attempts: 3, message: 'boom 2' });
    const info = await engine.get(result.id);
    expect(info).toMatchObject({
      status: 'failed',
      steps: 1,
      attempts: 3,
      error: { node: 'boom', attempts: 3, message: 'boom 2' },
    });
    expect(info?.shared).toEqual({ token: `failed-${name}`, visited: ['one'] });
    expect(info?.currentNode).toBeUndefined();
    expect(info?.errors.map((e) => e.attempt)).toEqual([0, 1, 2]);
    expectTimings(info);
  });

  it('counts every try of the step that failed the run in attempts', async () => {
    const { engine } = await setup('info-attempts', { flows });
    const result = await engine.run(fails, { token: `attempts-${name}` });
    const info = await engine.get(result.id);
    expect(info?.error?.attempts).toBe(3);
    expect(info?.attempts).toBe(3);
  });

  it('lists runs newest first, filtered by status and flow', async () => {
    const { engine, until, advance } = await setup('info-list', { flows });
    const token = `list-${name}`;
    gates.set(token, gate());
    // Each run is created a millisecond of engine time after the one before: distinct createdAt.
    const first = (await engine.run(quick, { token: `l1-${name}` })).id;
    await advance(1);
    const failed = (await engine.run(fails, { token: `l2-${name}` })).id;
    await advance(1);
    const third = (await engine.run(quick, { token: `l3-${name}` })).id;
    await advance(1);
    const running = (await engine.start(holdsSecond, { token })).id;
    await waitFor('the last run to be in step two', () => execs.of(token).includes('two'));
    await until(running, 'the last run to say so', (info) => info.status === 'running' && info.currentNode === 'two');

    const idsOf = async (options?: Parameters<Engine['list']>[0]): Promise<string[]> =>
      (await engine.list(options)).map((info) => info.id);
    expect(await idsOf()).toEqual([running, third, failed, first]);
    expect(await idsOf({ status: 'completed' })).toEqual([third, first]);
    expect(await idsOf({ status: 'failed' })).toEqual([failed]);
    expect(await idsOf({ status: 'running' })).toEqual([running]);
    expect(await idsOf({ status: 'cancelled' })).toEqual([]);
    expect(await idsOf({ flow: 'quick' })).toEqual([third, first]);
    expect(await idsOf({ limit: 2 })).toEqual([running, third]);
    expect(await idsOf({ status: 'completed', limit: 1 })).toEqual([third]);

    const listed = (await engine.list({ status: 'failed' }))[0];
    expect(listed).toMatchObject({ id: failed, flow: 'fails', status: 'failed', error: { node: 'boom', attempts: 3 } });
    gates.get(token)!.open();
    expect((await engine.run(quick, {})).status).toBe('completed');
  });
});
