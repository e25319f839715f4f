/**
 * Contract: the JSON boundary and unknown flows (DESIGN "Data"). A run whose `shared` or params
 * would not survive JSON is rejected with NOT_JSON naming the path before the engine stores
 * anything; a node that puts a non-JSON value in `shared`, or returns one from prep or exec, fails
 * the run with that error, and the last committed checkpoint stays as it was. An unknown flow is
 * rejected with UNKNOWN_FLOW, also before anything is stored.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

class First extends Node<S> {
  override post(shared: S): void {
    shared.a = 1;
  }
}

/** Writes `bad` to `shared.bad` in post (after a JSON-safe change). */
class PutsInShared extends Node<S> {
  constructor(private readonly bad: () => unknown) {
    super({ name: 'puts' });
  }
  override post(shared: S): void {
    shared.touched = true;
    shared.bad = this.bad();
  }
}

/** Returns a non-JSON value from prep (after changing shared). */
class BadPrep extends Node<S> {
  override prep(shared: S): unknown {
    shared.touched = true;
    return { handle: new Map([['k', 1]]) };
  }
}

/** Returns `bad` from exec. */
class BadExec extends Node<S> {
  constructor(private readonly bad: () => unknown) {
    super({ name: 'calc', maxRetries: 3 });
  }
  override prep(shared: S): void {
    shared.touched = true;
  }
  override exec(): unknown {
    return this.bad();
  }
  override post(shared: S, _prepRes: unknown, execRes: unknown): void {
    shared.result = execRes;
  }
}

function twoSteps(name: string, second: () => Node<S>) {
  return defineFlow(name, () => {
    const first = new First({ name: 'first' });
    first.next(second());
    return new Flow(first);
  });
}

const plain = defineFlow('plain', () => new Flow(new First({ name: 'first' })));
const sharedFunction = twoSteps('shared-function', () => new PutsInShared(() => () => 'nope'));
const sharedDate = twoSteps('shared-date', () => new PutsInShared(() => new Date(0)));
const prepMap = twoSteps('prep-map', () => new BadPrep({ name: 'load' }));
const execNaN = twoSteps('exec-nan', () => new BadExec(() => Number.NaN));
const execHole = twoSteps('exec-hole', () => new BadExec(() => [1, undefined, 3]));
const flows = [plain, sharedFunction, sharedDate, prepMap, execNaN, execHole];

class Client {
  query(): string {
    return 'rows';
  }
}

const rejected: { what: string; shared: Record<string, unknown>; params?: Record<string, unknown>; path: RegExp }[] = [
  { what: 'a function in shared', shared: { client: () => 'x' }, path: /shared\.client is a function/ },
  {
    what: 'a class instance in shared',
    shared: { db: { client: new Client() } },
    path: /shared\.db\.client is a Client/,
  },
  { what: 'NaN in shared', shared: { scores: [1, Number.NaN] }, path: /shared\.scores\[1\] is NaN/ },
  {
    what: 'undefined in an array of shared',
    shared: { list: ['a', undefined] },
    path: /shared\.list\[1\] is undefined/,
  },
  { what: 'a function in params', shared: {}, params: { onDone: () => {} }, path: /params\.onDone is a function/ },
  { what: 'a Date in params', shared: {}, params: { since: new Date(0) }, path: /params\.since is a Date/ },
];

const failing = [
  { what: 'puts a function in shared', flow: sharedFunction, node: 'puts', path: /shared\.bad is a function/ },
  { what: 'puts a Date in shared', flow: sharedDate, node: 'puts', path: /shared\.bad is a Date/ },
  {
    what: 'returns a Map inside its prep result',
    flow: prepMap,
    node: 'load',
    path: /prep result of 'load'.*\.handle is a Map/,
  },
  { what: 'returns NaN from exec', flow: execNaN, node: 'calc', path: /exec result of 'calc'.* is NaN/ },
  {
    what: 'returns an array with a hole from exec',
    flow: execHole,
    node: 'calc',
    path: /exec result of 'calc'.*\[1\] is undefined/,
  },
];

describe.each(engines)('%s: the JSON boundary', (name) => {
  const setup = useEngine(name);

  for (const { what, shared, params, path } of rejected) {
    it(`rejects a run with ${what} (NOT_JSON naming the path) and stores nothing`, async () => {
      const { engine, stored } = await setup('json-start', { flows, workers: 0 });
      const options = params ? { params: params as S } : {};
      await expect(engine.start(plain, shared as S, options)).rejects.toMatchObject({
        code: 'NOT_JSON',
        message: expect.stringMatching(path),
      });
      expect(await stored()).toEqual([]);
      // Once the engine is connected (RedisEngine's BullMQ queue writes its own meta key), a
      // rejected start still adds nothing.
      await engine.list();
      const before = await stored();
      await expect(engine.run(plain, shared as S, options)).rejects.toMatchObject({ code: 'NOT_JSON' });
      expect(await stored()).toEqual(before);
      expect(await engine.list()).toEqual([]);
    });
  }

  it('rejects an unknown flow with UNKNOWN_FLOW and stores nothing', async () => {
    const { engine, stored } = await setup('json-unknown', { flows, workers: 0 });
    await expect(engine.start('no-such-flow', {})).rejects.toMatchObject({
      code: 'UNKNOWN_FLOW',
      message: expect.stringContaining('no-such-flow'),
    });
    expect(await stored()).toEqual([]);
    await engine.list();
    const before = await stored();
    await expect(engine.run('no-such-flow', {})).rejects.toMatchObject({ code: 'UNKNOWN_FLOW' });
    expect(await stored()).toEqual(before);
    expect(await engine.list()).toEqual([]);
  });

  for (const { what, flow, node, path } of failing) {
    it(`fails the run of a node that ${what}, naming the path, and keeps the last checkpoint`, async () => {
      const { engine } = await setup('json-step', { flows });
      const result = await engine.run(flow, { start: true });
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ code: 'NOT_JSON', message: expect.stringMatching(path) });
      // The first step's commit stands; nothing of the failed step (not even its JSON-safe change).
      expect(result.shared).toEqual({ start: true, a: 1 });
      expect(await engine.get(result.id)).toMatchObject({ status: 'failed', steps: 1, shared: { start: true, a: 1 } });
      if (!flow.name.startsWith('shared-')) expect(result.error?.node).toBe(node);
    });
  }

  it('names the node whose post put a non-JSON value in shared, also when it ends the flow', async () => {
    const { engine } = await setup('json-node', { flows });
    const result = await engine.run(sharedFunction, {});
    expect(result.error?.code).toBe('NOT_JSON');
    expect(result.error?.node).toBe('puts');
  });
});
