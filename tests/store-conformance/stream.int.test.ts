/**
 * Store conformance: a run's stream. `appendStream` appends the entries a try of a step wrote, in
 * order, with the try's attempt (above an earlier writer's of the same step when that one was
 * cut short), after a restart entry when that one was cut short (no transition of the step ended
 * it), capped per run, never after the run's end; the transition that ends a run appends an end
 * marker when the run wrote entries or was followed (`followStream`), and only then; `readStream`
 * reads after an id, and with `blockMs` waits for the next entry
 * (RedisRunStore: every blocked read on one connection, through a StreamReader).
 */
import { describe, expect, it } from 'vitest';
import type { StoredStreamEntry, StreamWrite } from '@queueflow/runtime/kernel';
import { checkpoint, errorRecord, stores, useStore, type StoreHarness } from './store-harness.js';

/** A write of `data` values by node `node` at `step`/`attempt`. */
function write(
  step: number,
  attempt: number,
  data: unknown[],
  extra: { token?: string | undefined; item?: number; worker?: string } = {},
): StreamWrite {
  const token = 'token' in extra ? extra.token : 'try-a';
  return {
    step,
    attempt,
    ...(token === undefined ? {} : { token, worker: extra.worker ?? `worker-${token}` }),
    ...(extra.item === undefined ? {} : { item: extra.item }),
    entries: data.map((d, i) => ({ node: 'talker', at: 1000 + i, data: JSON.stringify(d) })),
  };
}

/** Every stored entry of the run's stream. */
async function all(h: StoreHarness, runId: string): Promise<StoredStreamEntry[]> {
  return h.store.readStream(runId, '0-0', { count: 100_000 });
}

/** Entries as data, attempts and ends, for comparing. */
function shape(entries: StoredStreamEntry[]): unknown[] {
  return entries.map((e) =>
    'end' in e
      ? { end: e.end }
      : { step: e.step, attempt: e.attempt, data: e.data, ...(e.restart ? { restart: e.restart } : {}) },
  );
}

describe.each(stores)('%s: appendStream', (name) => {
  const open = useStore(name);

  it('appends in order with the step, attempt, node, time and data; ids grow', async () => {
    const h = await open();
    const run = await h.started();
    const first = await h.store.appendStream(run.id, write(0, 0, ['a', { b: [1, null] }]));
    const second = await h.store.appendStream(run.id, write(0, 0, [3], { item: 2, token: undefined }));
    expect(first).toMatchObject({ result: 'appended', attempt: 0 });
    const ids = [
      ...(first.result === 'appended' ? first.ids : []),
      ...(second.result === 'appended' ? second.ids : []),
    ];
    const entries = await all(h, run.id);
    expect(entries).toEqual([
      { id: ids[0], step: 0, attempt: 0, node: 'talker', at: 1000, data: 'a' },
      { id: ids[1], step: 0, attempt: 0, node: 'talker', at: 1001, data: { b: [1, null] } },
      { id: ids[2], step: 0, attempt: 0, node: 'talker', at: 1000, data: 3, item: 2 },
    ]);
    expect(ids.every((id) => /^\d+-\d+$/.test(id))).toBe(true);
    const order = ids.map((id) => id.split('-').map(Number) as [number, number]);
    expect(order[1]![0] > order[0]![0] || order[1]![1] > order[0]![1]).toBe(true);
  });

  it('gives a try after one cut short an attempt above it, after a restart entry; a try keeps its attempt', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.appendStream(run.id, write(0, 0, ['first try'], { token: 'a' }));
    expect((await h.load(run.id)).streamWriter).toEqual({ step: 0, attempt: 0, worker: 'worker-a', ended: false });
    // The worker died; BullMQ runs the step again, still attempt 0, as another try.
    const again = await h.store.appendStream(run.id, write(0, 0, ['after the crash'], { token: 'b' }));
    expect(again).toMatchObject({ attempt: 1 });
    expect(again.result === 'appended' && again.ids).toHaveLength(2); // the restart entry, then its own
    expect(await h.store.appendStream(run.id, write(0, 0, ['same try'], { token: 'b' }))).toMatchObject({
      attempt: 1,
    });
    // The cut try still writing (its worker only paused) keeps its attempt, and restarts nothing.
    expect(await h.store.appendStream(run.id, write(0, 0, ['late'], { token: 'a' }))).toMatchObject({ attempt: 0 });
    // The try fails: a transition ends it, and the next try is no restart, with its own attempt.
    await h.store.commit(run, 'retry', { errorRecords: [errorRecord('try 1', { attempt: 1 })], now: h.now() });
    expect((await h.load(run.id)).streamWriter).toMatchObject({ attempt: 1, worker: 'worker-b', ended: true });
    expect(await h.store.appendStream(run.id, write(0, 3, ['retry'], { token: 'c' }))).toMatchObject({ attempt: 3 });
    // A try that starts and writes nothing yet (a restart: StepDriver) writes the restart entry alone.
    const opening = { ...write(0, 2, [], { token: 'd' }), node: 'talker', at: 5000 };
    expect(await h.store.appendStream(run.id, opening)).toMatchObject({ attempt: 4 });
    // Another step starts afresh.
    expect(await h.store.appendStream(run.id, write(1, 0, ['next step'], { token: 'e' }))).toMatchObject({
      attempt: 0,
    });
    // Items (no token) keep the attempt they give, and are no tries of their own.
    expect(await h.store.appendStream(run.id, write(1, 0, ['item'], { token: undefined, item: 0 }))).toMatchObject({
      attempt: 0,
    });
    const restart = (attempt: number, stopped: string, worker: string) => ({
      step: 0,
      attempt,
      data: null,
      restart: { attempt: stopped === 'worker-a' ? 0 : 3, stoppedWorker: stopped, worker },
    });
    expect(shape(await all(h, run.id))).toEqual([
      { step: 0, attempt: 0, data: 'first try' },
      restart(1, 'worker-a', 'worker-b'),
      { step: 0, attempt: 1, data: 'after the crash' },
      { step: 0, attempt: 1, data: 'same try' },
      { step: 0, attempt: 0, data: 'late' },
      { step: 0, attempt: 3, data: 'retry' },
      restart(4, 'worker-c', 'worker-d'),
      { step: 1, attempt: 0, data: 'next step' },
      { step: 1, attempt: 0, data: 'item' },
    ]);
    const entries = await all(h, run.id);
    expect(entries[6]).toMatchObject({ node: 'talker', at: 5000 });
  });

  it('a park and a reopen end the try: the step run again is no restart', async () => {
    const h = await open();
    const parked = await h.started();
    await h.store.appendStream(parked.id, write(0, 0, ['before the park'], { token: 'a' }));
    const park = { ordinal: 0, address: 'inbox', deadline: null };
    await h.store.park(parked, park, { sent: 0, parked: park }, []);
    await h.store.appendStream(parked.id, write(0, 0, ['woken'], { token: 'b' }));

    const cancelled = await h.started();
    await h.store.appendStream(cancelled.id, write(0, 0, ['before the cancel'], { token: 'a' }));
    await h.store.cancel(cancelled.id);
    await h.store.reopen(cancelled.id);
    await h.store.appendStream(cancelled.id, write(0, 0, ['retried'], { token: 'b' }));

    for (const run of [parked, cancelled]) {
      const entries = (await all(h, run.id)).filter((e) => !('end' in e));
      expect(entries.filter((e) => 'restart' in e && e.restart)).toEqual([]);
      expect(entries).toHaveLength(2);
    }
  });

  it('writes nothing for a run that has ended or does not exist', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.cancel(run.id);
    expect(await h.store.appendStream(run.id, write(0, 0, ['late']))).toEqual({ result: 'ended' });
    expect(await h.store.appendStream('no-such-run', write(0, 0, ['x']))).toEqual({ result: 'missing' });
    expect(shape(await all(h, run.id))).toEqual([]); // it wrote no entry and no one followed it: no marker
    expect(await all(h, 'no-such-run')).toEqual([]);
  });

  it("marks a run's end only where someone may read it: a run that wrote entries, or one followed before its end", async () => {
    const h = await open();
    const [silent, followed, talked, late] = await Promise.all([h.started(), h.started(), h.started(), h.started()]);
    expect(await h.store.followStream(followed.id)).toEqual({ status: 'running', step: 0 });
    await h.store.appendStream(talked.id, write(0, 0, ['said']));
    for (const run of [silent, followed, talked, late]) await h.store.cancel(run.id);
    expect(shape(await all(h, silent.id))).toEqual([]);
    expect(shape(await all(h, followed.id))).toEqual([{ end: 'cancelled' }]);
    expect(shape(await all(h, talked.id))).toEqual([{ step: 0, attempt: 0, data: 'said' }, { end: 'cancelled' }]);
    // A follower of a run that has ended learns of it from the status; nothing is written then.
    expect(await h.store.followStream(late.id)).toEqual({ status: 'cancelled', step: 0 });
    expect(shape(await all(h, late.id))).toEqual([]);
    expect(await h.store.followStream('no-such-run')).toBeUndefined();
  });

  it('keeps about the newest maxStreamEntries entries, oldest dropped first', async () => {
    const h = await open({ maxStreamEntries: 10 });
    const run = await h.started();
    for (let i = 0; i < 50; i++)
      await h.store.appendStream(
        run.id,
        write(
          0,
          0,
          Array.from({ length: 10 }, (_, k) => i * 10 + k),
        ),
      );
    const kept = await all(h, run.id);
    // Redis trims whole nodes of the stream (MAXLEN ~): about the cap, never fewer.
    expect(kept.length).toBeGreaterThanOrEqual(10);
    expect(kept.length).toBeLessThanOrEqual(name === 'MemoryRunStore' ? 10 : 200);
    expect(kept.at(-1)).toMatchObject({ data: 499 });
    expect(kept[0]).not.toMatchObject({ data: 0 });
  });

  it("a run's end appends an end marker after its entries: completed, failed, cancelled", async () => {
    const h = await open();
    const ends: [string, (run: Awaited<ReturnType<StoreHarness['started']>>) => Promise<unknown>][] = [
      ['completed', (run) => h.store.commit(run, 'completed', { checkpoint: checkpoint({}), now: h.now() })],
      [
        'failed',
        (run) =>
          h.store.commit(run, 'failed', {
            errorRecords: [errorRecord('boom')],
            runError: { name: 'Error', message: 'boom' },
            now: h.now(),
          }),
      ],
      ['cancelled', (run) => h.store.cancel(run.id)],
    ];
    for (const [status, end] of ends) {
      const run = await h.started();
      await h.store.appendStream(run.id, write(0, 0, ['said']));
      await end(run);
      expect(shape(await all(h, run.id))).toEqual([{ step: 0, attempt: 0, data: 'said' }, { end: status }]);
    }
  });
});

describe.each(stores)('%s: readStream', (name) => {
  const open = useStore(name);

  it('reads after an id, at most count, and nothing for an unknown run', async () => {
    const h = await open();
    const run = await h.started();
    const reply = await h.store.appendStream(run.id, write(0, 0, [0, 1, 2, 3, 4]));
    const ids = reply.result === 'appended' ? reply.ids : [];
    expect(shape(await h.store.readStream(run.id, '0-0', { count: 2 }))).toEqual([
      { step: 0, attempt: 0, data: 0 },
      { step: 0, attempt: 0, data: 1 },
    ]);
    expect((await h.store.readStream(run.id, ids[1]!, { count: 10 })).map((e) => e.id)).toEqual(ids.slice(2));
    expect(await h.store.readStream(run.id, ids[4]!, { count: 10 })).toEqual([]);
    expect(await h.store.readStream('no-such-run', '0-0', { count: 10 })).toEqual([]);
  });

  it('with blockMs waits for the next entry, or gives [] when none comes in time', async () => {
    const h = await open();
    const run = await h.started();
    const waiting = h.store.readStream(run.id, '0-0', { count: 10, blockMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await h.store.appendStream(run.id, write(0, 0, ['came']));
    expect(shape(await waiting)).toEqual([{ step: 0, attempt: 0, data: 'came' }]);
    const started = Date.now();
    const [last] = await all(h, run.id);
    expect(await h.store.readStream(run.id, last!.id, { count: 10, blockMs: 200 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it("a blocked read of a followed run wakes on the run's end marker", async () => {
    const h = await open();
    const run = await h.started();
    await h.store.followStream(run.id);
    const waiting = h.store.readStream(run.id, '0-0', { count: 10, blockMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await h.store.cancel(run.id);
    expect(shape(await waiting)).toEqual([{ end: 'cancelled' }]);
  });

  it('blocked reads of many runs, from different ids, each get their own entries', async () => {
    const h = await open();
    const runs = await Promise.all(Array.from({ length: 20 }, () => h.started()));
    // Half of them have an entry already and wait after it.
    const after = await Promise.all(
      runs.map(async (run, i) => {
        if (i % 2 === 1) return '0-0';
        const reply = await h.store.appendStream(run.id, write(0, 0, ['before']));
        return reply.result === 'appended' ? reply.ids[0]! : '0-0';
      }),
    );
    const waits = runs.map((run, i) => h.store.readStream(run.id, after[i]!, { count: 10, blockMs: 10_000 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const [i, run] of runs.entries()) await h.store.appendStream(run.id, write(0, 0, [`for ${i}`]));
    const got = await Promise.all(waits);
    got.forEach((entries, i) =>
      expect(shape(entries), `run ${i}`).toEqual([{ step: 0, attempt: 0, data: `for ${i}` }]),
    );
  });
});
