/**
 * A fan-out's parent waits without holding a worker slot (issue 4, item 1; DESIGN "Fan-out"):
 * one worker at concurrency 1 (and LocalEngine at concurrency 1) completes fan-outs of many
 * children, nested fan-outs included (a child waiting on its own children holds no slot either),
 * and the fan-in `post` runs exactly once, after the last child.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  defineFlow,
  Flow,
  LocalEngine,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type Engine,
  type JsonObject,
} from '@queueflow/runtime';
import { waitFor } from '../../../tests/support/wait-for.js';
import { gate, Tally, type Gate } from '../../../tests/support/node-probes.js';
import { useRedisHarness } from '../../../tests/support/redis-harness.js';

type S = Record<string, any>;

/** Per run token: what the fan-in posts saw (number of results), and child execs. */
const posts = new Tally<number>();
const execs = new Tally<string>();
const gates = new Map<string, Gate>();

class WriteResult extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<string> {
    const key = this.params.key as string;
    execs.add(token, key);
    if (key === 'k0') await gates.get(token)?.promise;
    return key;
  }
  override post(shared: S, _token: string, key: string): void {
    (shared.results ??= {})[key] = true;
  }
}

class Many extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return Array.from({ length: shared.n as number }, (_, i) => ({ key: `k${i}` }));
  }
  override post(shared: S): string {
    posts.add(shared.token as string, Object.keys(shared.results ?? {}).length);
    return 'all-in';
  }
}

/** Groups of parts: each group child fans out again over its parts. */
class Groups extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return Array.from({ length: shared.groups as number }, (_, g) => ({ group: `g${g}` }));
  }
  override post(shared: S): string {
    posts.add(shared.token as string, Object.keys(shared.results ?? {}).length);
    return 'all-in';
  }
}
class Parts extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return Array.from({ length: shared.parts as number }, (_, p) => ({ key: `${this.params.group as string}-p${p}` }));
  }
}

class Doubles extends ParallelBatchNode<S> {
  override prep(shared: S): number[] {
    return Array.from({ length: shared.n as number }, (_, i) => i);
  }
  override exec(n: number): number {
    return n * 2;
  }
  override post(shared: S, _items: unknown, doubles: number[]): string {
    posts.add(shared.token as string, doubles.length);
    shared.doubles = doubles;
    return 'all-in';
  }
}

const many = defineFlow(
  'waiting-many',
  () => new Flow(new Many(new WriteResult({ name: 'write-result' }), { name: 'many' })),
);
const nested = defineFlow(
  'waiting-nested',
  () =>
    new Flow(new Groups(new Parts(new WriteResult({ name: 'write-result' }), { name: 'parts' }), { name: 'groups' })),
);
const doubles = defineFlow('waiting-items', () => new Flow(new Doubles({ name: 'doubles' })));
const flows = [many, nested, doubles];

const setup = useRedisHarness();
const locals: LocalEngine[] = [];
afterEach(async () => {
  for (const engine of locals.splice(0)) await engine.close();
});

const engines: [string, () => Promise<Engine>][] = [
  [
    'LocalEngine at concurrency 1',
    async () => {
      const engine = new LocalEngine({ flows, concurrency: 1 });
      locals.push(engine);
      return engine;
    },
  ],
  [
    'RedisEngine, one worker at concurrency 1',
    async () => (await setup('fan-out-waiting', { flows, workers: 1, concurrency: 1 })).engine,
  ],
];

describe.each(engines)('%s', (_name, open) => {
  it('completes a ParallelBatchFlow of 60 children: the waiting parent holds no slot; post runs once, after the last child', async () => {
    const engine = await open();
    const token = `many-${Math.random()}`;
    gates.set(token, gate());
    const handle = await engine.start<S>(many, { token, n: 60 });

    // Child k0 holds the only slot until the gate opens; meanwhile the parent waits.
    await waitFor('child k0 to run', () => execs.of(token).includes('k0'));
    const waiting = await engine.get(handle.id);
    expect(waiting?.status).toBe('waiting');
    expect(waiting?.children).toMatchObject({ total: 60, failed: 0 });
    expect(posts.count(token)).toBe(0);
    gates.get(token)!.open();

    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.lastAction).toBe('all-in');
    expect(Object.keys(result.shared.results as object)).toHaveLength(60);
    expect(execs.count(token)).toBe(60);
    expect(posts.of(token)).toEqual([60]); // once, having every child's result
  });

  it('completes nested fan-outs (5 groups × 6 parts): a waiting child holds no slot either', async () => {
    const engine = await open();
    const token = `nested-${Math.random()}`;
    const result = await engine.run<S>(nested, { token, groups: 5, parts: 6 });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(Object.keys(result.shared.results as object).sort()).toEqual(
      ['g0', 'g1', 'g2', 'g3', 'g4'].flatMap((g) => [0, 1, 2, 3, 4, 5].map((p) => `${g}-p${p}`)).sort(),
    );
    expect(posts.of(token)).toEqual([30]);
  });

  it('completes a ParallelBatchNode of 50 items; post runs once with every result', async () => {
    const engine = await open();
    const token = `items-${Math.random()}`;
    const result = await engine.run<S>(doubles, { token, n: 50 });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.doubles).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
    expect(posts.of(token)).toEqual([50]);
  });
});
