/**
 * LocalEngine contract: completion and what `get` and `list` say about runs. `result()`
 * resolves also for a run that ended before the caller began to wait; finished runs stay
 * readable within the retention (`retainFinishedRuns`); status transitions, current node, steps,
 * attempts, timings and the error of a failed run; `list` newest first, filtered.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node, type RunInfo } from '../src/index.js';
import { FakeClock, until } from './fake-clock.js';
import { deferred, type Deferred } from './helpers.js';

type S = Record<string, any>;

const execs = new Map<string, string[]>();
const gates = new Map<string, Deferred<void>>();

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
    execs.set(token, [...(execs.get(token) ?? []), this.name!]);
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

describe('LocalEngine: completion and run info', () => {
  let engine: LocalEngine | undefined;
  afterEach(async () => {
    for (const gate of gates.values()) gate.resolve();
    await engine?.close();
    engine = undefined;
  });
  const open = (options: { concurrency?: number; retainFinishedRuns?: number } = {}): { engine: LocalEngine; clock: FakeClock } => {
    const clock = new FakeClock();
    engine = new LocalEngine({ flows, clock, ...options });
    return { engine, clock };
  };

  it('result() resolves for a run that ended before the caller began to wait', async () => {
    const { engine } = open();
    const handle = await engine.start(quick, { token: 'before' });
    await until('the run to complete', async () => (await engine.get(handle.id))?.status === 'completed');
    expect(await handle.result()).toMatchObject({ id: handle.id, status: 'completed', shared: { visited: ['one'] } });
  });

  it('resolves 1,000 runs awaited at once', async () => {
    const { engine } = open();
    const handles = await Promise.all(Array.from({ length: 1000 }, (_, i) => engine.start(quick, { i })));
    const results = await Promise.all(handles.map((handle) => handle.result()));
    expect(results.filter((result) => result.status === 'completed')).toHaveLength(1000);
    expect(results.map((result) => result.shared.i)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('get() answers for finished runs within retainFinishedRuns, the oldest forgotten first', async () => {
    const { engine } = open({ retainFinishedRuns: 2 });
    const first = await engine.run(quick, { n: 1 });
    const failed = await engine.run(fails, {});
    expect(await engine.get(first.id)).toMatchObject({ status: 'completed', shared: { n: 1 } });
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed', error: { node: 'boom', attempts: 3 } });

    const third = await engine.run(quick, { n: 3 });
    expect(await engine.get(first.id)).toBeUndefined();
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed' });
    expect(await engine.get(third.id)).toMatchObject({ status: 'completed' });
    expect(await engine.get('no-such-run')).toBeUndefined();
  });

  it('goes queued → running → completed, with the current node, steps and timings', async () => {
    const { engine, clock } = open({ concurrency: 1 });
    const blocker = 'blocker';
    gates.set(blocker, deferred());
    const busy = await engine.start(holdsFirst, { token: blocker });
    await until('the only slot to be taken', () => execs.get(blocker)?.length === 1);

    const token = 'complete';
    gates.set(token, deferred());
    const handle = await engine.start(holdsSecond, { token });
    const queued = await engine.get(handle.id);
    expect(queued).toMatchObject({ id: handle.id, flow: 'holds-second', status: 'queued', currentNode: 'one', steps: 0, attempts: 0 });
    expect(queued?.startedAt).toBeUndefined();
    expect(queued?.finishedAt).toBeUndefined();
    expect(queued?.errors).toEqual([]);

    clock.advance(10);
    gates.get(blocker)!.resolve();
    await busy.result();
    await until("step 'two' to be in exec", () => execs.get(token)?.includes('two'));
    const running = await engine.get(handle.id);
    expect(running).toMatchObject({ status: 'running', currentNode: 'two', steps: 1, shared: { token, visited: ['one'] } });
    expect(running?.startedAt).toBeGreaterThanOrEqual(running!.createdAt);
    expect(running?.finishedAt).toBeUndefined();

    clock.advance(10);
    gates.get(token)!.resolve();
    expect(await handle.result()).toMatchObject({ status: 'completed', lastAction: 'default' });
    const completed = await engine.get(handle.id);
    expect(completed).toMatchObject({ status: 'completed', steps: 3, lastAction: 'default', shared: { visited: ['one', 'two', 'three'] } });
    expect(completed?.currentNode).toBeUndefined();
    expect(completed?.error).toBeUndefined();
    expectTimings(completed);
  });

  it('says running, with startedAt, while the first step is in exec', async () => {
    const { engine } = open();
    const token = 'first';
    gates.set(token, deferred());
    const handle = await engine.start(holdsFirst, { token });
    await until("step 'one' to be in exec", () => execs.get(token)?.includes('one'));
    const info = await engine.get(handle.id);
    expect(info).toMatchObject({ status: 'running', currentNode: 'one', steps: 0 });
    expect(info?.startedAt).toBeGreaterThanOrEqual(info!.createdAt);
    gates.get(token)!.resolve();
    expect((await handle.result()).status).toBe('completed');
  });

  it('reports a failed run: status, the error with node and attempts, every try, timings', async () => {
    const { engine } = open();
    const result = await engine.run(fails, { token: 'failed' });
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ node: 'boom', attempts: 3, message: 'boom 2' });
    const info = await engine.get(result.id);
    expect(info).toMatchObject({ status: 'failed', steps: 1, attempts: 3, error: { node: 'boom', attempts: 3, message: 'boom 2' } });
    expect(info?.shared).toEqual({ token: 'failed', visited: ['one'] });
    expect(info?.currentNode).toBeUndefined();
    expect(info?.errors.map((e) => e.attempt)).toEqual([0, 1, 2]);
    expectTimings(info);
  });

  it('lists runs newest first, filtered by status and flow', async () => {
    const { engine, clock } = open();
    const token = 'list';
    gates.set(token, deferred());
    const first = (await engine.run(quick, { token: 'l1' })).id;
    clock.advance(1);
    const failed = (await engine.run(fails, { token: 'l2' })).id;
    clock.advance(1);
    const third = (await engine.run(quick, { token: 'l3' })).id;
    clock.advance(1);
    const running = (await engine.start(holdsSecond, { token })).id;
    await until('the last run to be in step two', () => execs.get(token)?.includes('two'));

    const idsOf = async (options?: Parameters<LocalEngine['list']>[0]): Promise<string[]> =>
      (await engine.list(options)).map((info) => info.id);
    expect(await idsOf()).toEqual([running, third, failed, first]);
    expect(await idsOf({ status: 'completed' })).toEqual([third, first]);
    expect(await idsOf({ status: 'failed' })).toEqual([failed]);
    expect(await idsOf({ status: 'running' })).toEqual([running]);
    expect(await idsOf({ status: 'cancelled' })).toEqual([]);
    expect(await idsOf({ flow: 'quick' })).toEqual([third, first]);
    expect(await idsOf({ limit: 2 })).toEqual([running, third]);
    expect(await idsOf({ status: 'completed', limit: 1 })).toEqual([third]);
    expect((await engine.list({ status: 'failed' }))[0]).toMatchObject({ id: failed, flow: 'fails', error: { node: 'boom', attempts: 3 } });
  });
});
