import { describe, expect, it } from 'vitest';
import {
  Flow,
  LocalEngine,
  MAX_STREAM_ENTRY_BYTES,
  Node,
  ParallelBatchNode,
  defineFlow,
  type StreamEntry,
} from '../src/index.js';

type S = { said?: string[] };

/** Emits `words` one by one from exec, failing its first `failTries` tries after emitting. */
class Speaker extends Node<S> {
  constructor(
    private readonly words: string[],
    private readonly failTries = 0,
  ) {
    super({ maxRetries: failTries + 1, name: 'speaker' });
  }
  override exec(): string[] {
    for (const word of this.words) this.emit({ word, try: this.currentRetry });
    if (this.currentRetry < this.failTries) throw new Error('fails after speaking');
    return this.words;
  }
  override post(shared: S, _p: unknown, words: string[]): void {
    shared.said = words;
    this.emit('done');
  }
}

async function collect(iterable: AsyncIterable<StreamEntry>): Promise<StreamEntry[]> {
  const entries: StreamEntry[] = [];
  for await (const entry of iterable) entries.push(entry);
  return entries;
}

describe('this.emit on flow.run', () => {
  it('hands each entry to onEmit in order, with step, attempt and node', async () => {
    const entries: StreamEntry[] = [];
    const flow = new Flow(new Speaker(['a', 'b'], 1));
    await flow.run({}, { onEmit: (entry) => entries.push(entry) });
    expect(entries.map(({ step, attempt, node, data }) => ({ step, attempt, node, data }))).toEqual([
      { step: 0, attempt: 0, node: 'speaker', data: { word: 'a', try: 0 } },
      { step: 0, attempt: 0, node: 'speaker', data: { word: 'b', try: 0 } },
      { step: 0, attempt: 1, node: 'speaker', data: { word: 'a', try: 1 } },
      { step: 0, attempt: 1, node: 'speaker', data: { word: 'b', try: 1 } },
      { step: 0, attempt: 1, node: 'speaker', data: 'done' },
    ]);
    const ids = entries.map((e) => e.id);
    expect(ids.every((id) => /^\d+-\d+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('drops entries without onEmit, and checks data at the JSON boundary with a size limit', async () => {
    await expect(new Flow(new Speaker(['a'])).run({})).resolves.toBeUndefined();
    class Bad extends Node {
      constructor(private readonly data: unknown) {
        super();
      }
      override exec(): void {
        this.emit(this.data as never);
      }
    }
    await expect(new Flow(new Bad({ f: () => 1 })).run({})).rejects.toMatchObject({
      code: 'NOT_JSON',
      message: expect.stringContaining('emitted data.f is a function'),
    });
    await expect(new Flow(new Bad('x'.repeat(MAX_STREAM_ENTRY_BYTES))).run({})).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      message: expect.stringContaining(`${MAX_STREAM_ENTRY_BYTES} bytes`),
    });
  });
});

describe('engine.stream on the LocalEngine', () => {
  const speech = defineFlow('speech', () => new Flow(new Speaker(['hello', 'world'], 1)));

  it('replays a finished run to a late subscriber and ends, keeping the failed try with its attempt', async () => {
    const engine = new LocalEngine({ flows: [speech] });
    const result = await engine.run(speech, {});
    expect(result.status).toBe('completed');
    const entries = await collect(engine.stream(result.id));
    expect(entries.map(({ step, attempt, node, data }) => ({ step, attempt, node, data }))).toEqual([
      { step: 0, attempt: 0, node: 'speaker', data: { word: 'hello', try: 0 } },
      { step: 0, attempt: 0, node: 'speaker', data: { word: 'world', try: 0 } },
      { step: 0, attempt: 1, node: 'speaker', data: { word: 'hello', try: 1 } },
      { step: 0, attempt: 1, node: 'speaker', data: { word: 'world', try: 1 } },
      { step: 0, attempt: 1, node: 'speaker', data: 'done' },
    ]);
    // From the id of an entry: the rest, nothing twice.
    expect(await collect(engine.stream(result.id, { from: entries[1]!.id }))).toEqual(entries.slice(2));
    expect(await collect(engine.stream(result.id, { from: entries.at(-1)!.id }))).toEqual([]);
    await engine.close();
  });

  it('follows a run live and ends when it ends', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    class Slow extends Node {
      override async exec(): Promise<void> {
        this.emit(1);
        await gate;
        this.emit(2);
      }
    }
    const slow = defineFlow('slow', () => new Flow(new Slow()));
    const engine = new LocalEngine({ flows: [slow] });
    const handle = await engine.start(slow, {});
    const seen: unknown[] = [];
    const following = (async () => {
      for await (const entry of engine.stream(handle.id)) {
        seen.push(entry.data);
        if (entry.data === 1) release();
      }
    })();
    await following;
    expect(seen).toEqual([1, 2]);
    expect((await handle.result()).status).toBe('completed');
    await engine.close();
  });

  it('tags entries of ParallelBatchNode items with their index', async () => {
    class Items extends ParallelBatchNode {
      override prep(): number[] {
        return [0, 1, 2];
      }
      override exec(item: number): number {
        this.emit({ item });
        return item;
      }
    }
    const items = defineFlow('items', () => new Flow(new Items({ name: 'items' })));
    const engine = new LocalEngine({ flows: [items] });
    const result = await engine.run(items, {});
    const entries = await collect(engine.stream(result.id));
    expect(entries.map((e) => [e.item, e.data, e.node]).sort()).toEqual([
      [0, { item: 0 }, 'items'],
      [1, { item: 1 }, 'items'],
      [2, { item: 2 }, 'items'],
    ]);
    await engine.close();
  });

  it('rejects an unknown run and a malformed from', async () => {
    const engine = new LocalEngine({ flows: [speech] });
    await expect(collect(engine.stream('nope'))).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    const { id } = await engine.run(speech, {});
    await expect(collect(engine.stream(id, { from: 'abc' }))).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await engine.close();
  });
});
