/**
 * Contract: shared memory (README "Conversations", `this.memory`). A named JSON document that
 * agents and runs share, versioned: updates are JSON Patch, written when the step that made them
 * ends (before its commit), each once; concurrent updates without `ifVersion` all land, on the
 * latest version; one made `ifVersion` a version that is no longer the latest fails with
 * `MEMORY_CONFLICT`, naming the paths and the writer that won. Its history keeps each change with
 * its writer.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  BatchNode,
  defineAgent,
  defineFlow,
  Flow,
  Node,
  QueueflowError,
  type JsonObject,
  type MemoryPatch,
} from '@queueflow/runtime';
import { gate, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

/** Each turn appends its key and message to `log` of memory `board-<token>`. */
class Append extends Node {
  override async prep(): Promise<void> {
    const { token, n } = this.message!.body as { token: string; n: number };
    const board = await this.memory(`board-${token}`);
    const patch: MemoryPatch =
      board.version === 0
        ? [{ op: 'add', path: '/log', value: [`${this.agentKey}:${n}`] }]
        : [{ op: 'add', path: '/log/-', value: `${this.agentKey}:${n}` }];
    await board.update(patch);
  }
}
const writer = defineAgent('mem-writer', { state: () => ({}), turn: () => new Append({ name: 'append' }) });

/** Gates by token: a step of `Racer` holds between reading and updating until opened. */
const gates = new Map<string, Gate>();
/** Opened by a `Racer` step once it has read the memory. */
const readSignals = new Map<string, Gate>();

interface Race extends JsonObject {
  token: string;
  path: string;
  early: string | null;
}

/** Reads memory `race-<token>`, holds, then sets `path` with `ifVersion` the version read. */
class Racer extends Node<Race> {
  override async exec(): Promise<void> {
    const { token, path } = this.params as { token: string; path: string };
    const memory = await this.memory(`race-${token}`);
    readSignals.get(`${token}:${path}`)?.open();
    await gates.get(`${token}:${path}`)?.promise;
    await memory.update([{ op: 'add', path, value: path }], { ifVersion: memory.version });
  }
}
const racer = defineFlow('mem-racer', () => new Flow(new Racer({ name: 'racer', maxRetries: 1 })));

/** Updates with a stale `ifVersion` and a bad patch, catching both. */
class Careless extends Node<Race> {
  override async prep(shared: Race): Promise<void> {
    const memory = await this.memory(`race-${shared.token}`);
    try {
      await memory.update([{ op: 'add', path: '/late', value: 1 }], { ifVersion: memory.version - 1 });
    } catch (error) {
      if (!(error instanceof QueueflowError)) throw error;
      shared.early = `${error.code}: ${error.message}`;
    }
    await expect(memory.update([{ op: 'remove', path: '/missing' }])).rejects.toMatchObject({ code: 'INVALID_OPTION' });
  }
}
const careless = defineFlow('mem-careless', () => new Flow(new Careless({ name: 'careless' })));

/** Updates in `prep`, then in `exec`, whose first try fails after staging its update. */
class Flaky extends Node<Race> {
  override async prep(shared: Race): Promise<void> {
    await (await this.memory(`flaky-${shared.token}`)).update([{ op: 'add', path: '/prep', value: true }]);
  }
  override async exec(): Promise<void> {
    const memory = await this.memory(`flaky-${(this.params as { token: string }).token}`);
    await memory.update([{ op: 'add', path: `/exec${this.currentRetry}`, value: true }]);
    if (this.currentRetry === 0) throw new Error('the first try fails');
  }
}
const flaky = defineFlow('mem-flaky', () => new Flow(new Flaky({ name: 'flaky', maxRetries: 2 })));

/** Two updates of one memory in a step, on the version read; then items whose first try fails once. */
class Twice extends Node<Race> {
  override async prep(shared: Race): Promise<void> {
    const memory = await this.memory(`twice-${shared.token}`);
    await memory.update([{ op: 'add', path: '/a', value: 1 }], { ifVersion: memory.version });
    await memory.update([{ op: 'replace', path: '/a', value: 2 }], { ifVersion: memory.version });
    expect((await this.memory(`twice-${shared.token}`)).value).toEqual({ a: 2 }); // staged, shown
  }
}
class Items extends BatchNode<Race> {
  override prep(): number[] {
    return [0, 1, 2];
  }
  override async exec(item: number): Promise<void> {
    const memory = await this.memory(`twice-${(this.params as { token: string }).token}`);
    await memory.update([{ op: 'add', path: `/item${item}try${this.currentRetry}`, value: true }]);
    if (item === 1 && this.currentRetry === 0) throw new Error('item 1 fails its first try');
  }
}
const twice = defineFlow('mem-twice', () => {
  const first = new Twice({ name: 'twice' });
  first.next(new Items({ name: 'items', maxRetries: 2 }));
  return new Flow(first);
});

describe.each(engines)('%s: shared memory', (name) => {
  const setup = useEngine(name);
  afterEach(() => {
    for (const held of gates.values()) held.open();
    gates.clear();
    readSignals.clear();
  });

  it("lands every agent's update on the latest version, and keeps who wrote each", async () => {
    const { engine } = await setup('mem-writers', { flows: [], agents: [writer], autoAdvance: true });
    const token = `w-${name}`;
    // The first update creates `/log`; two first writers would each `add` it, the second
    // replacing the first (RFC 6902 §4.1). So `a:1` lands before the 11 concurrent appends.
    await engine.send(writer.ref('a'), { token, n: 1 });
    await waitFor('the log made', async () => (await engine.memory(`board-${token}`)).version === 1);
    for (let n = 1; n <= 4; n++)
      for (const key of ['a', 'b', 'c']) if (n > 1 || key !== 'a') await engine.send(writer.ref(key), { token, n });
    await waitFor('12 updates', async () => (await engine.memory(`board-${token}`)).version === 12);
    const board = await engine.memory(`board-${token}`);
    const log = (board.value as { log: string[] }).log;
    expect(log).toHaveLength(12);
    for (const key of ['a', 'b', 'c'])
      expect(log.filter((entry) => entry.startsWith(`${key}:`))).toEqual([1, 2, 3, 4].map((n) => `${key}:${n}`));
    expect(board.history.map((change) => change.version)).toEqual([...Array(12).keys()].map((i) => i + 1));
    expect(new Set(board.history.map((change) => change.writer))).toEqual(
      new Set(['a', 'b', 'c'].map((key) => writer.ref(key))),
    );
    expect(board.history[1]!.patch).toEqual([{ op: 'add', path: '/log/-', value: log[1] }]);
  });

  it('fails a step whose ifVersion was overtaken while it ran, naming the paths and the winner', async () => {
    const { engine } = await setup('mem-race', { flows: [racer], autoAdvance: true });
    const token = `r-${name}`;
    const held = gate();
    gates.set(`${token}:/x`, held);
    const read = gate();
    readSignals.set(`${token}:/x`, read);
    const slow = await engine.start(racer, { token }, { params: { token, path: '/x' } });
    await read.promise;
    readSignals.delete(`${token}:/x`);
    gates.delete(`${token}:/x`); // the fast run does not hold
    const fast = await engine.run(racer, { token }, { params: { token, path: '/x' } });
    expect(fast.status).toBe('completed');
    held.open();
    const failed = await slow.result();
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ code: 'MEMORY_CONFLICT' });
    expect(failed.error!.message).toContain(`memory 'race-${token}'`);
    expect(failed.error!.message).toContain('/x');
    expect(failed.error!.message).toContain(fast.id); // the writer that won
    const memory = await engine.memory(`race-${token}`);
    expect(memory).toMatchObject({ version: 1, value: { x: '/x' } });
  });

  it("writes prep's updates once through exec's retries, and a failed try's none", async () => {
    const { engine } = await setup('mem-flaky', { flows: [flaky], autoAdvance: true });
    const token = `f-${name}`;
    const info = await engine.run(flaky, { token, path: '', early: null }, { params: { token } });
    expect(info.status).toBe('completed');
    const memory = await engine.memory(`flaky-${token}`);
    expect(memory.value).toEqual({ prep: true, exec1: true });
    // One write for the step: prep's update, kept through the retry, then the try that succeeded.
    expect(memory.history.map((change) => change.patch.map((op) => op.path))).toEqual([['/prep', '/exec1']]);
  });

  it("writes a step's updates of one memory together, and keeps each item's through another's retry", async () => {
    const { engine } = await setup('mem-twice', { flows: [twice], autoAdvance: true });
    const token = `t-${name}`;
    const info = await engine.run(twice, { token, path: '', early: null }, { params: { token } });
    expect(info.status).toBe('completed');
    const memory = await engine.memory(`twice-${token}`);
    expect(memory.value).toEqual({ a: 2, item0try0: true, item1try1: true, item2try0: true });
    expect(memory.history[0]!.patch).toHaveLength(2); // the two updates of one step, one version
    expect(memory.history.flatMap((change) => change.patch.map((op) => op.path))).not.toContain('/item1try0');
  });

  it('refuses a stale ifVersion at once, and a patch that does not apply, writing nothing', async () => {
    const { engine } = await setup('mem-careless', { flows: [racer, careless], autoAdvance: true });
    const token = `c-${name}`;
    expect((await engine.run(racer, { token }, { params: { token, path: '/a' } })).status).toBe('completed');
    const info = await engine.run(careless, { token, path: '', early: null });
    expect(info.status).toBe('completed');
    expect((info.shared as Race).early).toMatch(
      /^MEMORY_CONFLICT: memory 'race-[^']*': .*version 0.*version 1.*written by .*\/a/,
    );
    expect(await engine.memory(`race-${token}`)).toMatchObject({ version: 1, value: { a: '/a' } });
    await expect(engine.memory('has space')).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    expect(await engine.memory(`never-${token}`)).toEqual({
      name: `never-${token}`,
      value: {},
      version: 0,
      history: [],
    });
  });
});
