/**
 * Store conformance: `fanOut` and the reads of a fan-out (`fanOutOf`, `snapshotOf`, `itemOf`).
 * A fan-out commit moves the parent's step counter on and makes it wait; for child runs it
 * creates their records `<parent>.<step>.<index>`, each holding its first checkpoint as a delta
 * against the snapshot stored once; for items it stores each item. The parent's next commit (its
 * fan-in) clears the fan-out.
 */
import { describe, expect, it } from 'vitest';
import { childRunId, decodeCheckpoint, decodeShared, encodeChildStart } from '@queueflow/runtime/kernel';
import {
  FINGERPRINT,
  FLOW,
  RUNNABLE,
  checkpoint,
  completedOutcome,
  endReport,
  fannedOut,
  itemsFanOut,
  message,
  runsFanOut,
  stores,
  target,
  useStore,
  commitFanOut,
} from './store-harness.js';

describe.each(stores)('%s: fanOut', (name) => {
  const open = useStore(name);

  it('moves the parent on one step and makes it wait on its children', async () => {
    const h = await open();
    const run = await h.started();
    const fields = runsFanOut(h, { total: 3 });

    expect(await commitFanOut(h, run, fields)).toEqual({ result: 'committed', wakes: [] });
    expect(await h.load(run.id)).toEqual({
      ...run,
      status: 'waiting',
      step: 1,
      attempt: 0,
      checkpoint: fields.checkpoint,
      target: fields.target,
      updatedAt: fields.now,
    });
  });

  it('makes no child run at the commit: createChildren makes those that start, running, with their delta checkpoint', async () => {
    const h = await open();
    const run = await h.started();
    const fields = runsFanOut(h, { total: 3, startNow: 2 });
    await commitFanOut(h, run, fields, false);
    for (let index = 0; index < 3; index++) expect(await h.store.load(childRunId(run.id, 1, index))).toBeUndefined();

    const made = await h.store.createChildren(run.id, 1, [0, 1]);
    for (let index = 0; index < 2; index++) {
      const id = childRunId(run.id, 1, index);
      const loaded = await h.store.load(id);
      expect(loaded).toEqual({
        id,
        flow: FLOW,
        fingerprint: FINGERPRINT,
        status: 'running',
        step: 0,
        attempt: 0,
        checkpoint: encodeChildStart([{ kind: 'child', flow: FLOW, params: { i: index }, node: 'child-start' }]),
        target: target('child-start'),
        createdAt: expect.any(Number), // when it started (the store's own clock)
        startedAt: loaded?.createdAt,
        updatedAt: expect.any(Number),
        parent: { id: run.id, step: 1, index },
        parkCount: 0,
        replay: { sent: 0 },
      });
    }
    // It returns the records it made, as load gives them (a first step needs no read).
    expect(made).toEqual([await h.store.load(childRunId(run.id, 1, 0)), await h.store.load(childRunId(run.id, 1, 1))]);
    expect(await h.store.load(childRunId(run.id, 1, 2))).toBeUndefined();
    expect(await h.store.createChildren(run.id, 1, [1, 2])).toEqual([await h.store.load(childRunId(run.id, 1, 2))]);
  });

  it('createChildren leaves a record that exists as it is, and makes nothing for another step', async () => {
    const h = await open();
    const { parent, step, children } = await fannedOut(h, { total: 2 });
    const started = await h.store.loadForStep(children[0]!, RUNNABLE);
    expect(started).toMatchObject({ status: 'running' });
    await h.store.createChildren(parent.id, step, [0]);
    expect(await h.store.load(children[0]!)).toMatchObject({ status: 'running' });
    await h.store.createChildren(parent.id, step + 1, [5]);
    expect(await h.store.load(childRunId(parent.id, step + 1, 5))).toBeUndefined();
  });

  it('createChildren makes nothing for a parent that no longer waits on its fan-out (cancelled)', async () => {
    const h = await open();
    const started = await h.started();
    expect((await commitFanOut(h, started, runsFanOut(h, { total: 3 }), false)).result).toBe('committed');
    const parent = await h.load(started.id);
    const step = parent.step;
    expect((await h.store.cancel(parent.id)).result).toBe('cancelled-waiting');
    expect(await h.store.createChildren(parent.id, step, [1, 2])).toEqual([]);
    expect(await h.store.load(childRunId(parent.id, step, 1))).toBeUndefined();
  });

  it("a child's delta checkpoint decodes against the parent's snapshot to the parent's shared", async () => {
    const h = await open();
    const shared = { base: 1, nested: { list: [1, 2] } };
    const { parent, children } = await fannedOut(h, { total: 2, shared });

    const snapshot = await h.store.snapshotOf(parent.id);
    expect(snapshot && decodeShared(snapshot)).toEqual(shared);
    const child = await h.load(children[1]!);
    expect(decodeCheckpoint(child.checkpoint, () => decodeShared(snapshot!))).toEqual({
      shared,
      frames: [{ kind: 'child', flow: FLOW, params: { i: 1 }, node: 'child-start' }],
    });
  });

  it('a child run is running from its making: loadForStep finds it so, at step 0', async () => {
    const h = await open();
    const { children } = await fannedOut(h, { total: 1 });
    const made = await h.load(children[0]!);
    expect(await h.store.loadForStep(children[0]!, RUNNABLE)).toEqual(made);
    expect(made).toMatchObject({ status: 'running', step: 0 });
  });

  it('fanOutOf gives the request and counters: started is the children started now', async () => {
    const h = await open();
    const run = await h.started();
    const fields = runsFanOut(h, { total: 5, startNow: 2, onItemError: 'fail-fast' });
    await commitFanOut(h, run, fields);

    expect(await h.store.fanOutOf(run.id)).toEqual({
      request: fields.request,
      total: 5,
      started: 2,
      ended: 0,
      failed: 0,
      step: 1,
      flow: FLOW,
      fingerprint: FINGERPRINT,
      childTarget: target('child-start'),
    });
    expect(await h.store.record(run.id)).toMatchObject({ children: { total: 5, ended: 0, failed: 0 } });
  });

  it('an items fan-out stores each item and creates no child runs', async () => {
    const h = await open();
    const run = await h.started();
    const items = [{ a: 1 }, 'two', null, [3]];
    const fields = itemsFanOut(h, items, { startNow: 2 });
    expect((await commitFanOut(h, run, fields)).result).toBe('committed');

    for (let index = 0; index < items.length; index++) {
      expect(await h.store.itemOf(run.id, 1, index)).toEqual(items[index]);
      expect(await h.store.load(childRunId(run.id, 1, index))).toBeUndefined();
    }
    expect(await h.store.itemOf(run.id, 1, items.length)).toBeUndefined();
    expect(await h.store.fanOutOf(run.id)).toMatchObject({ request: fields.request, total: 4, started: 2, step: 1 });
    expect(await h.store.snapshotOf(run.id)).toBe(fields.snapshot);
  });

  it('a fan-out from a stale step counter is stale: no fan-out, no children', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'next', { now: h.now() });
    const before = await h.load(run.id);

    expect(await commitFanOut(h, run, runsFanOut(h, { total: 2 }))).toEqual({ result: 'stale', wakes: [] });
    expect(await h.load(run.id)).toEqual(before);
    expect(await h.store.fanOutOf(run.id)).toBeUndefined();
    expect(await h.store.snapshotOf(run.id)).toBeUndefined();
    expect(await h.store.load(childRunId(run.id, 1, 0))).toBeUndefined();
  });

  it('a fan-out from a stale park count is stale', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.park(run, { ordinal: 0, address: 'inbox', deadline: null }, { sent: 0 }, []);

    expect((await commitFanOut(h, run, runsFanOut(h, { total: 2 }))).result).toBe('stale');
    expect(await h.store.fanOutOf(run.id)).toBeUndefined();
    expect(await h.store.load(childRunId(run.id, 0, 0))).toBeUndefined();
  });

  it('a fan-out of an ended run is stale; of an unknown run, missing', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    const ended = await h.load(run.id);
    expect((await commitFanOut(h, ended, runsFanOut(h, { total: 1 }))).result).toBe('stale');

    const ghost = { ...ended, id: 'ghost' };
    expect(await commitFanOut(h, ghost, runsFanOut(h, { total: 1 }))).toEqual({ result: 'missing', wakes: [] });
    expect(await h.store.load(childRunId('ghost', 1, 0))).toBeUndefined();
  });

  it("delivers the step's sends and consumes what it received", async () => {
    const h = await open();
    await h.store.send('in', message('m1'));
    await h.store.send('in', message('m2'));
    const run = await h.started();
    expect(await h.store.reserveMessage(run, 0, 'in')).toEqual(message('m1'));

    const outbox = [{ address: 'out', message: message('sent') }];
    await commitFanOut(h, run, runsFanOut(h, { total: 1, outbox }));
    expect(await h.store.mailboxSize('out')).toBe(1);
    expect(await h.store.mailboxSize('in')).toBe(1);
    const other = await h.started();
    expect(await h.store.reserveMessage(other, 0, 'in')).toEqual(message('m2'));
  });

  it("the parent's fan-in commit drops the snapshot and keeps the children's outcomes", async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 1 });
    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome()))).toEqual({
      type: 'fan-in',
    });

    await h.store.commit(parent, 'next', {
      checkpoint: checkpoint({ merged: true }),
      target: target('after'),
      now: h.now(),
    });
    expect(await h.load(parent.id)).toMatchObject({ status: 'running', step: step + 1 });
    // engine.children still lists them; the fan-out is of an earlier step than the run's.
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ step, total: 1, ended: 1 });
    expect(await h.store.snapshotOf(parent.id)).toBeUndefined();
    expect(await h.store.outcomesOf(parent.id, 1)).toEqual([completedOutcome()]);
    expect(await h.store.record(parent.id)).not.toHaveProperty('children');
  });
});
