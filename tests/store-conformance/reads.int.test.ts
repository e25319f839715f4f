/**
 * Store conformance: what `get` and `list` read, and the small writes beside them. `record`
 * gives the run with its error history (capped at 50), conflicts and fan-out progress;
 * `appendErrors` adds to that history; `noteRefusal` notes why a worker gave the step back
 * (cleared by the next commit: commit.int.test.ts); `list` gives runs created by clients, newest
 * first, filtered, at most `limit`, never a fan-out child.
 */
import { describe, expect, it } from 'vitest';
import type { StoredRun } from '@queueflow/runtime/kernel';
import {
  MAX_ERRORS,
  checkpoint,
  errorRecord,
  fannedOut,
  parkOn,
  stores,
  useStore,
  type StoreHarness,
} from './store-harness.js';

/** The ids `list` gives for `options`. */
async function listed(h: StoreHarness, options: Parameters<StoreHarness['store']['list']>[0]): Promise<string[]> {
  return (await h.store.list(options)).map((run) => run.id);
}

/** A run as `list` must show it: every field but the checkpoint (run-info.ts: listing reads none). */
function listable(run: StoredRun): Omit<StoredRun, 'checkpoint'> {
  const { checkpoint: _checkpoint, ...rest } = run;
  return rest;
}

describe.each(stores)('%s: record, appendErrors, noteRefusal', (name) => {
  const open = useStore(name);

  it('record gives a new run with empty histories and no fan-out', async () => {
    const h = await open();
    const run = await h.created();
    expect(await h.store.record(run.id)).toEqual({ run, errors: [], conflicts: [] });
  });

  it("record gives a waiting parent's fan-out progress", async () => {
    const h = await open();
    const { parent } = await fannedOut(h, { total: 3, startNow: 1 });
    expect(await h.store.record(parent.id)).toEqual({
      run: parent,
      errors: [],
      conflicts: [],
      children: { total: 3, ended: 0, failed: 0 },
    });
  });

  it('appendErrors appends, oldest first, after what commits appended', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'retry', { errorRecords: [errorRecord('from commit', { attempt: 0 })], now: h.now() });
    await h.store.appendErrors(run.id, [errorRecord('item 0', { attempt: 0 }), errorRecord('item 1', { at: 5 })]);

    expect((await h.store.record(run.id))?.errors).toEqual([
      errorRecord('from commit', { attempt: 0 }),
      errorRecord('item 0', { attempt: 0 }),
      errorRecord('item 1', { at: 5 }),
    ]);
  });

  it('appendErrors keeps the last 50', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.appendErrors(
      run.id,
      Array.from({ length: 45 }, (_, i) => errorRecord(`e${i}`)),
    );
    await h.store.appendErrors(
      run.id,
      Array.from({ length: 15 }, (_, i) => errorRecord(`e${45 + i}`)),
    );

    const errors = (await h.store.record(run.id))!.errors;
    expect(errors).toHaveLength(MAX_ERRORS);
    expect(errors.map((e) => e.message)).toEqual(Array.from({ length: 50 }, (_, i) => `e${i + 10}`));
  });

  it('appendErrors of nothing changes nothing; to an unknown run, creates no run', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.appendErrors(run.id, []);
    expect((await h.store.record(run.id))?.errors).toEqual([]);

    await h.store.appendErrors('nope', [errorRecord('lost')]);
    expect(await h.store.record('nope')).toBeUndefined();
    expect(await h.store.load('nope')).toBeUndefined();
  });

  it('noteRefusal notes why the step was given back; the last note stands', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.noteRefusal(run.id, 'flow not deployed here');
    await h.store.noteRefusal(run.id, 'graph fingerprint differs');

    expect(await h.load(run.id)).toEqual({ ...run, refusal: 'graph fingerprint differs' });
    expect((await h.store.record(run.id))?.run.refusal).toBe('graph fingerprint differs');
  });

  it('noteRefusal on an unknown run creates no run', async () => {
    const h = await open();
    await h.store.noteRefusal('nope', 'who?');
    expect(await h.store.load('nope')).toBeUndefined();
    expect(await h.store.position('nope')).toBeUndefined();
    expect(await listed(h, { limit: 10 })).toEqual([]);
  });

  it('outcomesOf, fanOutOf, snapshotOf and itemOf of a run without a fan-out find nothing', async () => {
    const h = await open();
    const run = await h.started();
    for (const id of [run.id, 'nope']) {
      expect(await h.store.outcomesOf(id, 2)).toEqual([undefined, undefined]);
      expect(await h.store.fanOutOf(id)).toBeUndefined();
      expect(await h.store.snapshotOf(id)).toBeUndefined();
      expect(await h.store.itemOf(id, 0, 0)).toBeUndefined();
    }
  });
});

describe.each(stores)('%s: list', (name) => {
  const open = useStore(name);

  it('gives runs newest first', async () => {
    const h = await open();
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await h.created()).id);
    expect(await listed(h, { limit: 10 })).toEqual([...ids].reverse());
  });

  it('gives runs created in the same millisecond last created first', async () => {
    // Clients start runs faster than one a millisecond: "newest first" must not fall back on
    // another order (such as the ids') among runs of the same createdAt.
    const h = await open();
    const now = h.now();
    for (const id of ['run-b', 'run-a', 'run-c']) await h.store.create(h.newRun({ id, now }));
    expect(await listed(h, { limit: 10 })).toEqual(['run-c', 'run-a', 'run-b']);
  });

  it('gives at most `limit` runs, the newest', async () => {
    const h = await open();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await h.created()).id);
    expect(await listed(h, { limit: 2 })).toEqual([ids[4], ids[3]]);
    expect(await listed(h, { limit: 1 })).toEqual([ids[4]]);
  });

  it('filters by status, by flow, and by both', async () => {
    const h = await open();
    const queuedA = await h.created({ flow: 'a' });
    const runningA = await h.started({ flow: 'a' });
    const queuedB = await h.created({ flow: 'b' });
    const completedA = await h.started({ flow: 'a' });
    await h.store.commit(completedA, 'completed', { checkpoint: checkpoint({}), now: h.now() });

    expect(await listed(h, { limit: 10, status: 'queued' })).toEqual([queuedB.id, queuedA.id]);
    expect(await listed(h, { limit: 10, flow: 'a' })).toEqual([completedA.id, runningA.id, queuedA.id]);
    expect(await listed(h, { limit: 10, flow: 'a', status: 'queued' })).toEqual([queuedA.id]);
    expect(await listed(h, { limit: 10, status: 'completed' })).toEqual([completedA.id]);
    expect(await listed(h, { limit: 10, flow: 'c' })).toEqual([]);
  });

  it('finds the few runs a filter matches behind many newer ones, up to `limit`', async () => {
    const h = await open();
    const old = [];
    for (let i = 0; i < 3; i++) old.push((await h.created({ flow: 'rare' })).id);
    for (let i = 0; i < 120; i++) await h.created({ flow: 'common' });

    expect(await listed(h, { limit: 2, flow: 'rare' })).toEqual([old[2], old[1]]);
    expect(await listed(h, { limit: 10, flow: 'rare' })).toEqual([...old].reverse());
  });

  it('never gives a fan-out child', async () => {
    const h = await open();
    const before = await h.created();
    const { parent } = await fannedOut(h, { total: 3 });
    const after = await h.created();

    expect(await listed(h, { limit: 10 })).toEqual([after.id, parent.id, before.id]);
    expect(await listed(h, { limit: 10, status: 'queued' })).toEqual([after.id, before.id]);
    expect(await listed(h, { limit: 1, status: 'queued' })).toEqual([after.id]);
  });

  it('shows each run as load does, but for its checkpoint', async () => {
    const h = await open();
    const queued = await h.created();
    const refused = await h.started();
    await h.store.noteRefusal(refused.id, 'other code');
    const retried = await h.started();
    await h.store.commit(retried, 'retry', { errorRecords: [errorRecord('try 0', { attempt: 0 })], now: h.now() });
    const parked = await parkOn(h, await h.started(), 'inbox');
    const completed = await h.started();
    await h.store.commit(completed, 'completed', { checkpoint: checkpoint({}), lastAction: 'done', now: h.now() });
    const failed = await h.started();
    await h.store.commit(failed, 'failed', { runError: { message: 'broke', code: 'X' }, now: h.now() });
    const cancelled = await h.started();
    await h.store.cancel(cancelled.id);
    const { parent } = await fannedOut(h, { total: 1 });

    const ids = [queued, refused, retried, parked.run, completed, failed, cancelled, parent].map((run) => run.id);
    const loaded = await Promise.all(ids.map((id) => h.load(id)));
    expect((await h.store.list({ limit: 20 })).map(listable)).toEqual(loaded.reverse().map(listable));
  });
});
