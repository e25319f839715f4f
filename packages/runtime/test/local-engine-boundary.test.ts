/**
 * LocalEngine contract: the JSON boundary and unknown flows. A run whose `shared` or params
 * would not survive JSON is rejected with NOT_JSON naming the path, and the engine records
 * nothing; a node that puts a non-JSON value in `shared`, or returns one from prep or exec,
 * fails the run with that error and the last committed checkpoint stays as it was.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node } from '../src/index.js';

type S = Record<string, any>;

class First extends Node<S> {
  override post(shared: S): void {
    shared.a = 1;
  }
}

class PutsInShared extends Node<S> {
  constructor(private readonly bad: () => unknown) {
    super({ name: 'puts' });
  }
  override post(shared: S): void {
    shared.touched = true;
    shared.bad = this.bad();
  }
}

class BadPrep extends Node<S> {
  override prep(shared: S): unknown {
    shared.touched = true;
    return { handle: new Map([['k', 1]]) };
  }
}

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

describe('LocalEngine: the JSON boundary', () => {
  let engine: LocalEngine;
  afterEach(async () => {
    await engine.close();
  });

  const rejected: { what: string; shared: Record<string, unknown>; params?: Record<string, unknown>; path: RegExp }[] = [
    { what: 'a function in shared', shared: { client: () => 'x' }, path: /shared\.client is a function/ },
    { what: 'a class instance in shared', shared: { db: { client: new Client() } }, path: /shared\.db\.client is a Client/ },
    { what: 'NaN in shared', shared: { scores: [1, Number.NaN] }, path: /shared\.scores\[1\] is NaN/ },
    { what: 'undefined in an array of shared', shared: { list: ['a', undefined] }, path: /shared\.list\[1\] is undefined/ },
    { what: 'a function in params', shared: {}, params: { onDone: () => {} }, path: /params\.onDone is a function/ },
    { what: 'a Date in params', shared: {}, params: { since: new Date(0) }, path: /params\.since is a Date/ },
  ];

  for (const { what, shared, params, path } of rejected) {
    it(`rejects a run with ${what} (NOT_JSON naming the path) and records nothing`, async () => {
      engine = new LocalEngine({ flows });
      const options = params ? { params: params as S } : {};
      await expect(engine.start(plain, shared as S, options)).rejects.toMatchObject({
        code: 'NOT_JSON',
        message: expect.stringMatching(path),
      });
      await expect(engine.run(plain, shared as S, options)).rejects.toMatchObject({ code: 'NOT_JSON' });
      expect(await engine.list()).toEqual([]);
    });
  }

  it('rejects an unknown flow with UNKNOWN_FLOW and records nothing', async () => {
    engine = new LocalEngine({ flows });
    await expect(engine.start('no-such-flow', {})).rejects.toMatchObject({
      code: 'UNKNOWN_FLOW',
      message: expect.stringContaining('no-such-flow'),
    });
    await expect(engine.run('no-such-flow', {})).rejects.toMatchObject({ code: 'UNKNOWN_FLOW' });
    expect(await engine.list()).toEqual([]);
  });

  const failing = [
    { what: 'puts a function in shared', flow: sharedFunction, node: 'puts', path: /shared\.bad is a function/ },
    { what: 'puts a Date in shared', flow: sharedDate, node: 'puts', path: /shared\.bad is a Date/ },
    { what: 'returns a Map inside its prep result', flow: prepMap, node: 'load', path: /prep result of 'load'.*\.handle is a Map/ },
    { what: 'returns NaN from exec', flow: execNaN, node: 'calc', path: /exec result of 'calc'.* is NaN/ },
    { what: 'returns an array with a hole from exec', flow: execHole, node: 'calc', path: /exec result of 'calc'.*\[1\] is undefined/ },
  ];

  for (const { what, flow, node, path } of failing) {
    it(`fails the run of a node that ${what}, naming the path, and keeps the last checkpoint`, async () => {
      engine = new LocalEngine({ flows });
      const result = await engine.run(flow, { start: true });
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ code: 'NOT_JSON', message: expect.stringMatching(path) });
      expect(result.shared).toEqual({ start: true, a: 1 });
      expect(await engine.get(result.id)).toMatchObject({ status: 'failed', steps: 1, shared: { start: true, a: 1 } });
      if (!flow.name.startsWith('shared-')) expect(result.error?.node).toBe(node);
    });
  }

  it('names the node whose post put a non-JSON value in shared, also when it ends the flow', async () => {
    engine = new LocalEngine({ flows });
    const result = await engine.run(sharedFunction, {});
    expect(result.error?.code).toBe('NOT_JSON');
    expect(result.error?.node).toBe('puts');
  });
});
