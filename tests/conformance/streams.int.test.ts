/**
 * Contract: `this.emit` appends to the run's stream, and `engine.stream(runId, { from })`
 * replays it and follows it live until the run ends, the same on every engine (see
 * packages/runtime/test/stream.test.ts for `flow.run`'s `onEmit`).
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type StreamEntry } from '@queueflow/runtime';
import { aborted, gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor, within } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = { token: string; failTries?: number };

/** Per test: the gate the talker waits on after each word, opened by the test. */
const gates = new Map<string, Gate[]>();

/** Says `count` words, each after its gate (when the test set gates), then fails its first tries. */
class Talker extends Node<S> {
  constructor(
    name: string,
    private readonly count: number,
  ) {
    super({ name, maxRetries: 3 });
  }
  override prep(shared: S): S {
    return shared;
  }
  override async exec(shared: S): Promise<void> {
    for (let i = 0; i < this.count; i++) {
      await gates.get(shared.token)?.[i]?.promise;
      this.emit({ node: this.name ?? '', i, try: this.currentRetry });
    }
    if (this.currentRetry < (shared.failTries ?? 0)) throw new Error(`try ${this.currentRetry} fails`);
  }
}

const talk = defineFlow('stream-talk', () => {
  const first = new Talker('first', 3);
  first.next(new Talker('second', 2));
  return new Flow(first);
});

/** Tries of Forever that have seen their cancel, by token. */
const stopped = new Tally();

class Forever extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    this.emit('started');
    await aborted(this.signal); // until cancelled
    setImmediate(() => stopped.add(token, true)); // once this step has settled
    this.signal?.throwIfAborted();
  }
}
const forever = defineFlow('stream-forever', () => new Flow(new Forever({ name: 'forever' })));

async function collect(iterable: AsyncIterable<StreamEntry>, stopAfter = Infinity): Promise<StreamEntry[]> {
  const entries: StreamEntry[] = [];
  for await (const entry of iterable) {
    entries.push(entry);
    if (entries.length >= stopAfter) break;
  }
  return entries;
}

const plain = (entries: StreamEntry[]): unknown[] =>
  entries.map(({ step, attempt, node, data }) => ({ step, attempt, node, data }));

describe.each(engines)('%s: run streams', (name) => {
  const setup = useEngine(name);

  it('gives a late subscriber the whole stream, a failed try with its attempt, and ends', async () => {
    const { engine } = await setup('late', { flows: [talk] });
    const result = await engine.run(talk, { token: `late-${name}`, failTries: 1 });
    expect(result.status).toBe('completed');
    const entries = await within(collect(engine.stream(result.id)), 10_000, 'the stream did not end');
    expect(plain(entries)).toEqual([
      ...[0, 1, 2].map((i) => ({ step: 0, attempt: 0, node: 'first', data: { node: 'first', i, try: 0 } })),
      ...[0, 1, 2].map((i) => ({ step: 0, attempt: 1, node: 'first', data: { node: 'first', i, try: 1 } })),
      ...[0, 1].map((i) => ({ step: 1, attempt: 0, node: 'second', data: { node: 'second', i, try: 0 } })),
      ...[0, 1].map((i) => ({ step: 1, attempt: 1, node: 'second', data: { node: 'second', i, try: 1 } })),
    ]);
    const ids = entries.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const order = ids.map((id) => id.split('-').map(Number) as [number, number]);
    expect(
      order.every(
        ([ms, seq], i) => i === 0 || ms > order[i - 1]![0] || (ms === order[i - 1]![0] && seq > order[i - 1]![1]),
      ),
    ).toBe(true);
    expect(entries.every((e) => typeof e.at === 'number' && e.at > 0)).toBe(true);
  });

  it('follows live; a follower that comes back from its last id misses nothing and sees nothing twice', async () => {
    const token = `live-${name}`;
    const opened = Array.from({ length: 5 }, () => gate());
    gates.set(token, opened);
    const { engine } = await setup('live', { flows: [talk] });
    const handle = await engine.start(talk, { token });
    const seen: StreamEntry[] = [];
    // Read one entry at a time, leaving (break) after each and coming back from its id.
    let from: string | undefined;
    opened[0]!.open();
    for (let round = 0; round < 5; round++) {
      const [entry] = await within(
        collect(engine.stream(handle.id, from === undefined ? {} : { from }), 1),
        10_000,
        `no entry ${round}`,
      );
      seen.push(entry!);
      from = entry!.id;
      opened[round + 1]?.open(); // the next word of the first node (its gates run out after 3)
    }
    // The rest, live to the end.
    const rest = await within(collect(engine.stream(handle.id, { from: from! })), 10_000, 'the stream did not end');
    expect(plain([...seen, ...rest]).map((e) => (e as { data: unknown }).data)).toEqual([
      { node: 'first', i: 0, try: 0 },
      { node: 'first', i: 1, try: 0 },
      { node: 'first', i: 2, try: 0 },
      { node: 'second', i: 0, try: 0 },
      { node: 'second', i: 1, try: 0 },
    ]);
    expect((await handle.result()).status).toBe('completed');
    gates.delete(token);
  });

  it('ends the stream of a cancelled run, and one of a retried run goes on to its new end', async () => {
    const token = `cancel-${name}`;
    const { engine } = await setup('cancel', { flows: [forever] });
    const handle = await engine.start(forever, { token });
    const following = collect(engine.stream(handle.id));
    // Once the step has said it started, cancel.
    const [first] = await within(collect(engine.stream(handle.id), 1), 10_000, 'the step did not start');
    expect(first!.data).toBe('started');
    await engine.cancel(handle.id);
    expect((await within(following, 10_000, 'the stream did not end on cancel')).map((e) => e.data)).toEqual([
      'started',
    ]);
    // The retried run writes again after its old end; a follower from the start sees both tries.
    await waitFor('the cancelled step to stop', () => stopped.count(token) === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await engine.retry(handle.id);
    const again = collect(engine.stream(handle.id));
    await within(
      (async () => {
        for await (const entry of engine.stream(handle.id, { from: first!.id })) if (entry.data === 'started') return;
      })(),
      10_000,
      'the retried run did not write',
    );
    await engine.cancel(handle.id);
    expect((await within(again, 10_000, 'the stream did not end')).map((e) => e.data)).toEqual(['started', 'started']);
  });

  it('rejects an unknown run', async () => {
    const { engine } = await setup('unknown', { flows: [talk], workers: 0 });
    await expect(collect(engine.stream('no-such-run'))).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });
});
