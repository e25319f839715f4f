/**
 * Fan-out merge semantics on LocalEngine and RedisEngine (issue 4, items 1 and 6; DESIGN
 * "Fan-out"): children start from a snapshot of the parent's `shared`, and their changes merge
 * back in parameter-set order with JSON Patch semantics. Containers several children create
 * merge, appends keep param-set order, and two children writing one path resolve in param-set
 * order with the conflict listed on `get(runId).conflicts`.
 *
 * Children end in reverse param-set order (child i of n waits (n - i) × 15 ms), so an engine that
 * merged in completion order would show it. With `flow.run` children share one `shared` object:
 * the last writer in time wins and nothing is reported (the documented difference).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  defineFlow,
  Flow,
  LocalEngine,
  Node,
  ParallelBatchFlow,
  type Engine,
  type FlowDefinition,
  type JsonObject,
} from '@queueflow/runtime';
import { useRedisHarness } from '../../../tests/support/redis-harness.js';

type S = Record<string, any>;
interface ChildParams {
  key: string;
  index: number;
  n: number;
  [key: string]: unknown;
}

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One param set `{ key, index, n }` per entry of `shared.keys`. */
class PerKey extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    const keys = shared.keys as string[];
    return keys.map((key, index) => ({ key, index, n: keys.length }));
  }
}

/** A child that ends after its later siblings: child i of n takes (n - i) × 15 ms. */
class Child extends Node<S, ChildParams> {
  override async exec(): Promise<string> {
    await delay((this.params.n - this.params.index) * 15);
    return this.params.key;
  }
}

/** The common pattern: each child writes its own key of `shared.results`. */
class WriteResult extends Child {
  override post(shared: S, _prepRes: unknown, key: string): void {
    (shared.results ??= {})[key] = { index: this.params.index, lang: this.params.lang ?? null };
  }
}

class AppendLog extends Child {
  override post(shared: S, _prepRes: unknown, key: string): void {
    (shared.log ??= []).push(key);
  }
}

/**
 * Odd children write `shared.winner`; every child writes its own key of `shared.config` (a
 * container they all create) and `shared.config.mode` (one path they all write).
 */
class Race extends Child {
  override post(shared: S, _prepRes: unknown, key: string): void {
    if (this.params.index % 2 === 1) shared.winner = key;
    const config = (shared.config ??= {});
    config[key] = true;
    config.mode = key;
  }
}

class Count extends Node<S> {
  override post(shared: S): string {
    shared.count = Object.keys(shared.results ?? {}).length;
    return 'counted';
  }
}

const keyed = defineFlow('merge-keyed', () => {
  const fan = new PerKey(new WriteResult({ name: 'write-result' }), { name: 'per-key' });
  fan.next(new Count({ name: 'count' }));
  return new Flow(fan);
});
const appending = defineFlow(
  'merge-appending',
  () => new Flow(new PerKey(new AppendLog({ name: 'append-log' }), { name: 'per-key' })),
);
const racing = defineFlow('merge-racing', () => new Flow(new PerKey(new Race({ name: 'race' }), { name: 'per-key' })));
const flows = [keyed, appending, racing];

const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4'];

async function viaFlowRun(
  flow: FlowDefinition,
  shared: S,
  params: JsonObject = {},
): Promise<{ shared: S; lastAction: string | undefined }> {
  const root = flow.build();
  root.setParams(params);
  const copy = structuredClone(shared);
  const lastAction = await root.run(copy);
  return { shared: JSON.parse(JSON.stringify(copy)) as S, lastAction };
}

const setup = useRedisHarness();
const locals: LocalEngine[] = [];
afterEach(async () => {
  for (const engine of locals.splice(0)) await engine.close();
});

const engines: [string, () => Promise<Engine>][] = [
  [
    'LocalEngine',
    async () => {
      const engine = new LocalEngine({ flows });
      locals.push(engine);
      return engine;
    },
  ],
  ['RedisEngine (2 workers)', async () => (await setup('fan-out-merge', { flows, workers: 2, concurrency: 4 })).engine],
];

describe.each(engines)('fan-out merge on %s', (_name, open) => {
  it.each([
    ['results does not exist before the fan-out', { keys: KEYS }],
    ['results exists before the fan-out', { keys: KEYS, results: { kept: 'before' } }],
    ['keys that need JSON Pointer escapes', { keys: ['a/b', 'c~d', '~1', '0', '', 'e.f'] }],
  ])(
    'each child writing shared.results[params.key] gives the same final shared as flow.run (%s)',
    async (_case, shared) => {
      const engine = await open();
      const params = { lang: 'fr' };
      const expected = await viaFlowRun(keyed, shared, params);
      const result = await engine.run<S>(keyed, structuredClone(shared), { params });

      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      expect({ shared: result.shared, lastAction: result.lastAction }).toEqual(expected);
      expect(result.shared.count).toBe(Object.keys(expected.shared.results).length);
      expect((await engine.get(result.id))?.conflicts).toEqual([]);
    },
  );

  it.each([
    ['the array does not exist before', { keys: KEYS }, KEYS],
    ['the array exists before', { keys: KEYS, log: ['before'] }, ['before', ...KEYS]],
  ])('children appending to one array keep param-set order (%s)', async (_case, shared, log) => {
    const engine = await open();
    const result = await engine.run<S>(appending, structuredClone(shared));

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.log).toEqual(log);
    expect((await engine.get(result.id))?.conflicts).toEqual([]);
  });

  it.each([
    ['the paths do not exist before', { keys: KEYS }],
    ['the paths exist before', { keys: KEYS, winner: 'initial', config: { mode: 'initial' } }],
  ])(
    'children writing the same path resolve in param-set order; the conflict is listed with path and children (%s)',
    async (_case, shared) => {
      const engine = await open();
      const result = await engine.run<S>(racing, structuredClone(shared));

      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      // The last in param-set order wins: k3 among the odd children, k4 among all.
      expect(result.shared.winner).toBe('k3');
      expect(result.shared.config).toEqual({ k0: true, k1: true, k2: true, k3: true, k4: true, mode: 'k4' });
      const { conflicts } = (await engine.get(result.id))!;
      expect(conflicts).toHaveLength(2);
      expect(conflicts).toEqual(
        expect.arrayContaining([
          { path: '/winner', children: [1, 3] },
          { path: '/config/mode', children: [0, 1, 2, 3, 4] },
        ]),
      );
    },
  );

  it('documented difference for racing children: flow.run keeps the last writer in time, the engine the last in param-set order and reports it', async () => {
    const engine = await open();
    const shared = { keys: KEYS };
    const embedded = await viaFlowRun(racing, shared);
    const appended = await viaFlowRun(appending, shared);
    const onEngine = await engine.run<S>(racing, structuredClone(shared));
    const appendedOnEngine = await engine.run<S>(appending, structuredClone(shared));

    // flow.run: children share one object; they end in reverse order, so child 1 writes `winner`
    // last and child 0 writes `config.mode` last; appends land in completion order.
    expect(embedded.shared.winner).toBe('k1');
    expect(embedded.shared.config.mode).toBe('k0');
    expect(appended.shared.log).toEqual([...KEYS].reverse());
    // The engine: param-set order, whatever the completion order, with the conflicts reported.
    expect(onEngine.shared.winner).toBe('k3');
    expect(onEngine.shared.config.mode).toBe('k4');
    expect(appendedOnEngine.shared.log).toEqual(KEYS);
    expect((await engine.get(onEngine.id))?.conflicts.map((c) => c.path).sort()).toEqual(['/config/mode', '/winner']);
    // Writes to distinct paths are the same on both.
    expect(onEngine.shared.config).toEqual({ ...embedded.shared.config, mode: 'k4' });
  });
});
