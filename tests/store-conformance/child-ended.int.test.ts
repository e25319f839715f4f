/**
 * Store conformance: a child's end recorded on its waiting parent, by `childEnded` (items, and
 * redelivered reports) and by the commit that ends a child run (`commit` with a ChildReport), in
 * the same transition. Once per child index; the answer says what the parent does next
 * (ChildEndedResult): start the children of a range (as ends make room in the window, `refill` at
 * a time), `fan-in` on the last child,
 * `parent-ended` when a failure fails it fast, `duplicate` for a redelivery, `ignored` when the
 * parent no longer waits on that fan-out.
 */
import { describe, expect, it } from 'vitest';
import { childRunId, type ChildReport } from '@queueflow/runtime/kernel';
import {
  PARENT_ERROR,
  RUNNABLE,
  checkpoint,
  completedOutcome,
  endReport,
  errorRecord,
  failedOutcome,
  fannedOut,
  itemsFanOut,
  runsFanOut,
  stores,
  useStore,
  type StoreHarness,
  commitFanOut,
} from './store-harness.js';

describe.each(stores)('%s: childEnded', (name) => {
  const open = useStore(name);

  it('under a concurrency cap, each end names the next child to start until all have started', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 4, startNow: 2 });

    const ended = (index: number) => h.store.childEnded(parent.id, step, index, endReport(h, completedOutcome()));
    expect(await ended(1)).toEqual({ type: 'recorded', start: { first: 2, count: 1 } });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ started: 3, ended: 1 });
    expect(await ended(0)).toEqual({ type: 'recorded', start: { first: 3, count: 1 } });
    expect(await ended(2)).toEqual({ type: 'recorded', start: undefined });
    expect(await ended(3)).toEqual({ type: 'fan-in' });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ total: 4, started: 4, ended: 4, failed: 0 });
  });

  it('with a refill, ends start children in batches as they make room, never past the window', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 10, startNow: 4, refill: 3 });

    const ended = (index: number) => h.store.childEnded(parent.id, step, index, endReport(h, completedOutcome()));
    expect(await ended(0)).toEqual({ type: 'recorded', start: undefined }); // room for 1 of 3
    expect(await ended(1)).toEqual({ type: 'recorded', start: undefined }); // 2
    expect(await ended(2)).toEqual({ type: 'recorded', start: { first: 4, count: 3 } });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ started: 7, ended: 3 });
    for (const index of [3, 4]) expect(await ended(index)).toEqual({ type: 'recorded', start: undefined });
    expect(await ended(5)).toEqual({ type: 'recorded', start: { first: 7, count: 3 } });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ started: 10, ended: 6 });
    for (const index of [6, 7, 8]) expect(await ended(index)).toEqual({ type: 'recorded', start: undefined });
    expect(await ended(9)).toEqual({ type: 'fan-in' });
  });

  it('an end whose caller takes the next child starts one as soon as there is room, refill or not', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 10, startNow: 4, refill: 3 });

    const ended = (index: number, take: boolean) =>
      h.store.childEnded(parent.id, step, index, { ...endReport(h, completedOutcome()), ...(take ? { take } : {}) });
    expect(await ended(0, true)).toEqual({ type: 'recorded', start: { first: 4, count: 1 } });
    expect(await ended(1, false)).toEqual({ type: 'recorded', start: undefined }); // room for 1 of 3
    // The room the untaking end left comes along with the taken child: never past the window.
    expect(await ended(2, true)).toEqual({ type: 'recorded', start: { first: 5, count: 2 } });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ started: 7, ended: 3 });
  });

  it('with a refill, the last children start together once they all fit', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 5, startNow: 3, refill: 3 });

    const ended = (index: number) => h.store.childEnded(parent.id, step, index, endReport(h, completedOutcome()));
    expect(await ended(0)).toEqual({ type: 'recorded', start: undefined });
    expect(await ended(1)).toEqual({ type: 'recorded', start: { first: 3, count: 2 } });
  });

  it('with every child started, ends are recorded and the last asks for the fan-in', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 3 });
    for (const index of [2, 0]) {
      expect(await h.store.childEnded(parent.id, step, index, endReport(h, completedOutcome(index)))).toEqual({
        type: 'recorded',
        start: undefined,
      });
    }
    expect(await h.store.childEnded(parent.id, step, 1, endReport(h, completedOutcome(1)))).toEqual({
      type: 'fan-in',
    });
    expect(await h.load(parent.id)).toMatchObject({ status: 'waiting', step });
  });

  it('outcomesOf gives each recorded outcome at its index, undefined for the others', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 4 });
    await h.store.childEnded(parent.id, step, 3, endReport(h, completedOutcome('three')));
    await h.store.childEnded(parent.id, step, 1, endReport(h, failedOutcome('one failed')));

    expect(await h.store.outcomesOf(parent.id, 4)).toEqual([
      undefined,
      failedOutcome('one failed'),
      undefined,
      completedOutcome('three'),
    ]);
  });

  it('a child ending twice is a duplicate: the first outcome and the counters stay', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 3, startNow: 1 });
    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome('first')))).toEqual({
      type: 'recorded',
      start: { first: 1, count: 1 },
    });
    const counters = await h.store.fanOutOf(parent.id);

    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, failedOutcome()))).toEqual({ type: 'duplicate' });
    expect(await h.store.fanOutOf(parent.id)).toEqual(counters);
    expect((await h.store.outcomesOf(parent.id, 3))[0]).toEqual(completedOutcome('first'));
    expect((await h.store.record(parent.id))?.errors).toEqual([]);
  });

  it("the last child's end redelivered asks for the fan-in again", async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 2 });
    await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome()));
    expect(await h.store.childEnded(parent.id, step, 1, endReport(h, completedOutcome()))).toEqual({ type: 'fan-in' });
    expect(await h.store.childEnded(parent.id, step, 1, endReport(h, completedOutcome()))).toEqual({ type: 'fan-in' });
    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome()))).toEqual({ type: 'fan-in' });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 2 });
  });

  it('fail-fast: a failed child ends the parent failed with the given error', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 3, onItemError: 'fail-fast' });
    await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome(), true));
    const report = endReport(h, failedOutcome('boom'), true);

    expect(await h.store.childEnded(parent.id, step, 1, report)).toEqual({ type: 'parent-ended' });
    expect(await h.load(parent.id)).toEqual({
      ...parent,
      status: 'failed',
      error: PARENT_ERROR,
      updatedAt: report.now,
      finishedAt: report.now,
    });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 2, failed: 1 });
    expect((await h.store.record(parent.id))?.errors).toEqual([errorRecord('boom', { retryable: false })]);
  });

  it('fail-fast: a child that ends after the parent failed is ignored', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 3, onItemError: 'fail-fast' });
    await h.store.childEnded(parent.id, step, 0, endReport(h, failedOutcome(), true));
    const failed = await h.load(parent.id);

    expect(await h.store.childEnded(parent.id, step, 1, endReport(h, completedOutcome(), true))).toEqual({
      type: 'ignored',
    });
    expect(await h.load(parent.id)).toEqual(failed);
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 1, failed: 1 });
    expect((await h.store.outcomesOf(parent.id, 3))[1]).toBeUndefined();
  });

  it('fail-fast: a completed child does not end the parent', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 2, onItemError: 'fail-fast' });
    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome(), true))).toEqual({
      type: 'recorded',
      start: undefined,
    });
    expect((await h.load(parent.id)).status).toBe('waiting');
  });

  it('collect: a failed child is counted and its error kept; the parent waits for the rest', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 2 });
    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, failedOutcome('collected')))).toEqual({
      type: 'recorded',
      start: undefined,
    });
    expect(await h.store.childEnded(parent.id, step, 1, endReport(h, completedOutcome()))).toEqual({ type: 'fan-in' });

    expect(await h.load(parent.id)).toMatchObject({ status: 'waiting' });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 2, failed: 1 });
    expect(await h.store.record(parent.id)).toMatchObject({
      errors: [errorRecord('collected', { retryable: false })],
      children: { total: 2, ended: 2, failed: 1 },
    });
  });

  it('a report without an outcome records the child cancelled, counted as failed', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 2 });
    expect(await h.store.childEnded(parent.id, step, 1, endReport(h, undefined))).toEqual({
      type: 'recorded',
      start: undefined,
    });
    expect(await h.store.outcomesOf(parent.id, 2)).toEqual([undefined, { status: 'cancelled' }]);
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 1, failed: 1 });
    expect((await h.store.record(parent.id))?.errors).toEqual([]);
  });

  it('fail-fast: a cancelled child ends the parent', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 2, onItemError: 'fail-fast' });
    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, undefined, true))).toEqual({
      type: 'parent-ended',
    });
    expect(await h.load(parent.id)).toMatchObject({ status: 'failed', error: PARENT_ERROR });
  });

  it("an end is recorded at the parent's time of the report", async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 2 });
    const report = endReport(h, completedOutcome());
    await h.store.childEnded(parent.id, step, 0, report);
    expect((await h.load(parent.id)).updatedAt).toBe(report.now);
  });

  it('items: ends are recorded the same way', async () => {
    const h = await open();
    const run = await h.started();
    await commitFanOut(h, run, itemsFanOut(h, ['a', 'b', 'c'], { startNow: 1 }));
    const item = { status: 'completed', value: 'A' } as const;
    expect(await h.store.childEnded(run.id, 1, 0, endReport(h, item))).toEqual({
      type: 'recorded',
      start: { first: 1, count: 1 },
    });
    expect(await h.store.childEnded(run.id, 1, 1, endReport(h, item))).toEqual({
      type: 'recorded',
      start: { first: 2, count: 1 },
    });
    expect(await h.store.childEnded(run.id, 1, 2, endReport(h, item))).toEqual({ type: 'fan-in' });
    expect(await h.store.outcomesOf(run.id, 3)).toEqual([item, item, item]);
  });

  it('ignored: an unknown parent, a parent not waiting, another step of the parent', async () => {
    const h = await open();
    expect(await h.store.childEnded('nope', 1, 0, endReport(h, completedOutcome()))).toEqual({ type: 'ignored' });

    const running = await h.started();
    expect(await h.store.childEnded(running.id, 0, 0, endReport(h, completedOutcome()))).toEqual({ type: 'ignored' });
    expect(await h.store.outcomesOf(running.id, 1)).toEqual([undefined]);

    const { parent, step } = await fannedOut(h, { total: 2 });
    for (const other of [step - 1, step + 1]) {
      expect(await h.store.childEnded(parent.id, other, 0, endReport(h, completedOutcome()))).toEqual({
        type: 'ignored',
      });
    }
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 0 });
  });

  it('ignored: the end of a child of a fan-out the parent has moved past', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 1 });
    await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome()));
    await h.store.commit(parent, 'next', { checkpoint: checkpoint({ merged: true }), now: h.now() });

    expect(await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome()))).toEqual({
      type: 'ignored',
    });
  });
});

describe.each(stores)('%s: commit of a fan-out child', (name) => {
  const open = useStore(name);

  /** A fan-out whose first `startNow` children were made (those a worker starts), child 0 loaded. */
  async function windowed(h: StoreHarness, shape: Parameters<typeof fannedOut>[1] & { startNow: number }) {
    const started = await h.started();
    await commitFanOut(h, started, runsFanOut(h, shape), false);
    const parent = await h.load(started.id);
    await h.store.createChildren(
      parent.id,
      parent.step,
      Array.from({ length: shape.startNow }, (_, i) => i),
    );
    const run = (await h.store.loadForStep(childRunId(parent.id, parent.step, 0), RUNNABLE))!;
    const report = (take: boolean): ChildReport => ({
      ...endReport(h, completedOutcome()),
      parent: run.parent!,
      ...(take ? { take } : {}),
    });
    return { parent, step: parent.step, run, report };
  }

  /** A fan-out of `total` child runs, and child `index` started. */
  async function child(h: StoreHarness, shape: Parameters<typeof fannedOut>[1], index = 0) {
    const fanned = await fannedOut(h, shape);
    const run = (await h.store.loadForStep(fanned.children[index]!, RUNNABLE))!;
    const report = (outcome: Parameters<typeof endReport>[1], failFast = false): ChildReport => ({
      ...endReport(h, outcome, failFast),
      parent: run.parent!,
    });
    return { ...fanned, run, report };
  }

  it('a completing child records its outcome on the parent in the same transition', async () => {
    const h = await open();
    const { parent, run, report } = await child(h, { total: 2, startNow: 1 });

    const reply = await h.store.commit(
      run,
      'completed',
      { checkpoint: checkpoint({}), lastAction: 'default', now: h.now() },
      report(completedOutcome()),
    );
    expect(reply).toEqual({
      result: 'committed',
      wakes: [],
      parent: { type: 'recorded', start: { first: 1, count: 1 } },
    });
    expect((await h.load(run.id)).status).toBe('completed');
    expect(await h.store.outcomesOf(parent.id, 2)).toEqual([completedOutcome(), undefined]);
  });

  it("with take and takenBy, the child the end starts is made in the same transition and among the worker's taken tasks", async () => {
    const h = await open();
    const { parent, step, run, report } = await windowed(h, { total: 4, startNow: 2, refill: 2 });

    const fields = { checkpoint: checkpoint({}), now: h.now(), takenBy: 'w1' };
    const reply = await h.store.commit(run, 'completed', fields, report(true));
    const next = childRunId(parent.id, step, 2);
    const made = await h.store.load(next);
    expect(made).toMatchObject({ status: 'running', step: 0, parent: { id: parent.id, step, index: 2 } });
    // One at a time, the window's refill of 2 notwithstanding; the record as load gives it.
    expect(reply).toEqual({
      result: 'committed',
      wakes: [],
      parent: { type: 'recorded', start: { first: 2, count: 1 }, made },
    });
    expect(await h.store.claimTaken('w1')).toEqual([`${next}-0`]);
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ started: 3, ended: 1 });
  });

  it('with take but no takenBy, the end starts the child and makes nothing: the caller does', async () => {
    const h = await open();
    const { parent, step, run, report } = await windowed(h, { total: 3, startNow: 1 });

    const reply = await h.store.commit(run, 'completed', { now: h.now() }, report(true));
    expect(reply.parent).toEqual({ type: 'recorded', start: { first: 1, count: 1 } });
    expect(await h.store.load(childRunId(parent.id, step, 1))).toBeUndefined();
  });

  it('the last child completing asks for the fan-in', async () => {
    const h = await open();
    const { run, report } = await child(h, { total: 1 });
    const reply = await h.store.commit(run, 'completed', { now: h.now() }, report(completedOutcome()));
    expect(reply.parent).toEqual({ type: 'fan-in' });
  });

  it('a failing child fails a fail-fast parent: parent-ended', async () => {
    const h = await open();
    const { parent, run, report } = await child(h, { total: 2, onItemError: 'fail-fast' });
    const error = errorRecord('child broke', { attempt: 0, retryable: false });

    const reply = await h.store.commit(
      run,
      'failed',
      { errorRecords: [error], runError: { message: 'child broke', attempts: 1 }, now: h.now() },
      report({ status: 'failed', error }, true),
    );
    expect(reply).toEqual({ result: 'committed', wakes: [], parent: { type: 'parent-ended' } });
    expect(await h.load(run.id)).toMatchObject({ status: 'failed', error: { message: 'child broke' } });
    expect(await h.load(parent.id)).toMatchObject({ status: 'failed', error: PARENT_ERROR });
    expect(await h.store.outcomesOf(parent.id, 2)).toEqual([{ status: 'failed', error }, undefined]);
    expect((await h.store.record(parent.id))?.errors).toEqual([error]);
  });

  it('a failing child of a collecting parent is recorded failed', async () => {
    const h = await open();
    const { parent, run, report } = await child(h, { total: 2 });
    const error = errorRecord('child broke', { attempt: 0 });
    const reply = await h.store.commit(
      run,
      'failed',
      { errorRecords: [error], runError: { message: 'child broke' }, now: h.now() },
      report({ status: 'failed', error }),
    );
    expect(reply.parent).toEqual({ type: 'recorded', start: undefined });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 1, failed: 1 });
    expect((await h.load(parent.id)).status).toBe('waiting');
  });

  it.each(['next', 'retry'] as const)('a %s commit of a child records nothing on the parent', async (mode) => {
    const h = await open();
    const { parent, run, report } = await child(h, { total: 1 });
    const reply = await h.store.commit(
      run,
      mode,
      { checkpoint: checkpoint({}), errorRecords: [errorRecord('try 0', { attempt: 0 })], now: h.now() },
      report(completedOutcome()),
    );
    expect(reply).toEqual({ result: 'committed', wakes: [] });
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 0 });
    expect(await h.store.outcomesOf(parent.id, 1)).toEqual([undefined]);
  });

  it('a stale commit of a child records nothing on the parent', async () => {
    const h = await open();
    const { parent, run, report } = await child(h, { total: 1 });
    await h.store.commit(run, 'next', { now: h.now() });

    const reply = await h.store.commit(run, 'completed', { now: h.now() }, report(completedOutcome()));
    expect(reply).toEqual({ result: 'stale', wakes: [] });
    expect(await h.store.outcomesOf(parent.id, 1)).toEqual([undefined]);
  });

  it('a child completing after its parent failed fast commits; the parent ignores it', async () => {
    const h = await open();
    const { parent, step, run, report } = await child(h, { total: 2, onItemError: 'fail-fast' }, 0);
    await h.store.childEnded(parent.id, step, 1, endReport(h, failedOutcome(), true));

    const reply = await h.store.commit(run, 'completed', { now: h.now() }, report(completedOutcome(), true));
    expect(reply).toEqual({ result: 'committed', wakes: [], parent: { type: 'ignored' } });
    expect((await h.load(run.id)).status).toBe('completed');
    expect((await h.store.outcomesOf(parent.id, 2))[0]).toBeUndefined();
  });

  it('a failing child whose report has no outcome is recorded failed, with its last error', async () => {
    // ChildEndReport.outcome is optional in run-store.ts, which names no outcome the store
    // records for a run that fails here without one (only `cancelled` for a run the commit
    // cancels). Expected: the failure is recorded, with the error that failed the child.
    const h = await open();
    const { parent, run, report } = await child(h, { total: 2 });
    const error = errorRecord('child broke', { attempt: 0 });
    const reply = await h.store.commit(
      run,
      'failed',
      { errorRecords: [error], runError: { message: 'child broke', attempts: 1 }, now: h.now() },
      report(undefined),
    );
    expect(reply.parent).toEqual({ type: 'recorded', start: undefined });
    expect(await h.store.outcomesOf(parent.id, 2)).toEqual([{ status: 'failed', error }, undefined]);
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 1, failed: 1 });
    expect((await h.store.record(parent.id))?.errors).toEqual([error]);
  });

  it('a child ending twice (a second child report for its index) is a duplicate', async () => {
    const h = await open();
    const { parent, step, run, report } = await child(h, { total: 2 });
    await h.store.childEnded(parent.id, step, 0, endReport(h, failedOutcome('reported first')));

    const reply = await h.store.commit(run, 'completed', { now: h.now() }, report(completedOutcome()));
    expect(reply).toEqual({ result: 'committed', wakes: [], parent: { type: 'duplicate' } });
    expect((await h.store.outcomesOf(parent.id, 2))[0]).toEqual(failedOutcome('reported first'));
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 1, failed: 1 });
  });
});
