/**
 * Store conformance: `cancel` (CancelResult in run-store.ts). A cancel ends the run `cancelled`
 * at once: no later transition of its step lands (a commit, fan-out or park after it is `stale`,
 * a reservation `stale`), the messages its step reserved go back to the head of their mailboxes
 * (waking the runs parked there), and it leaves the waiters of the address it parked on. A parent
 * waiting on a fan-out answers `cancelled-waiting` (the caller cancels the children); the store
 * records nothing on the parent of a cancelled child (the caller reports it).
 */
import { describe, expect, it } from 'vitest';
import { childRunId, type CommitMode } from '@queueflow/runtime/kernel';
import {
  RUNNABLE,
  checkpoint,
  completedOutcome,
  drain,
  endReport,
  errorRecord,
  fannedOut,
  message,
  parkOn,
  runsFanOut,
  stores,
  target,
  useStore,
  commitFanOut,
} from './store-harness.js';

const modes: CommitMode[] = ['next', 'retry', 'completed', 'failed'];

describe.each(stores)('%s: cancel', (name) => {
  const open = useStore(name);

  it.each(['queued', 'running'] as const)('a %s run is cancelled now', async (status) => {
    const h = await open();
    const run = status === 'queued' ? await h.created() : await h.started();

    expect(await h.store.cancel(run.id)).toEqual({ result: 'cancelled', wakes: [] });
    const cancelled = await h.load(run.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', step: 0, checkpoint: run.checkpoint });
    expect(cancelled.finishedAt).toEqual(expect.any(Number));
    expect(await h.store.position(run.id)).toEqual({ status: 'cancelled', step: 0 });
  });

  it('a parent waiting on a fan-out is cancelled-waiting; its children are left to the caller', async () => {
    const h = await open();
    const { parent, children } = await fannedOut(h, { total: 2 });

    expect(await h.store.cancel(parent.id)).toEqual({ result: 'cancelled-waiting', wakes: [] });
    expect((await h.load(parent.id)).status).toBe('cancelled');
    for (const id of children) expect((await h.load(id)).status).toBe('running');
  });

  it('a run parked on a mailbox is cancelled (not cancelled-waiting) and leaves its waiters', async () => {
    const h = await open();
    const parked = await parkOn(h, await h.started(), 'inbox');

    expect(await h.store.cancel(parked.run.id)).toEqual({ result: 'cancelled', wakes: [] });
    expect(await h.store.send('inbox', message('m1'))).toEqual({ wakes: [] });
  });

  it('a parent that fanned in and parked is cancelled, not cancelled-waiting', async () => {
    const h = await open();
    const { parent, step } = await fannedOut(h, { total: 1 });
    await h.store.childEnded(parent.id, step, 0, endReport(h, completedOutcome()));
    await h.store.commit(parent, 'next', { checkpoint: checkpoint({}), target: target('ask'), now: h.now() });
    await parkOn(h, await h.load(parent.id), 'replies');

    expect((await h.store.cancel(parent.id)).result).toBe('cancelled');
  });

  it('an ended run is left as it is: ended', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'completed', { checkpoint: checkpoint({}), lastAction: 'done', now: h.now() });
    const completed = await h.load(run.id);

    expect(await h.store.cancel(run.id)).toEqual({ result: 'ended', wakes: [] });
    expect(await h.load(run.id)).toEqual(completed);
  });

  it('a second cancel finds the run ended', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.cancel(run.id);
    const cancelled = await h.load(run.id);
    expect(await h.store.cancel(run.id)).toEqual({ result: 'ended', wakes: [] });
    expect(await h.load(run.id)).toEqual(cancelled);
  });

  it('an unknown run is missing', async () => {
    const h = await open();
    expect(await h.store.cancel('nope')).toEqual({ result: 'missing', wakes: [] });
    expect(await h.store.load('nope')).toBeUndefined();
  });

  it.each(modes)('a %s commit after the cancel is stale and writes nothing', async (mode) => {
    const h = await open();
    const run = await h.started();
    await h.store.cancel(run.id);
    const cancelled = await h.load(run.id);

    const reply = await h.store.commit(run, mode, {
      checkpoint: checkpoint({ late: true }),
      target: target('late'),
      errorRecords: [errorRecord('late', { attempt: 0 })],
      runError: { message: 'late' },
      lastAction: 'late',
      outbox: [{ address: 'out', message: message('late') }],
      now: h.now(),
    });
    expect(reply).toEqual({ result: 'stale', wakes: [] });
    expect(await h.load(run.id)).toEqual(cancelled);
    expect((await h.store.record(run.id))?.errors).toEqual([]);
    expect(await h.store.mailboxSize('out')).toBe(0);
  });

  it('a fan-out after the cancel is stale: no children are created', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.cancel(run.id);

    expect(await commitFanOut(h, run, runsFanOut(h, { total: 2 }))).toEqual({ result: 'stale', wakes: [] });
    expect(await h.store.fanOutOf(run.id)).toBeUndefined();
    expect(await h.store.load(childRunId(run.id, 1, 0))).toBeUndefined();
    expect((await h.load(run.id)).status).toBe('cancelled');
  });

  it('a park after the cancel is stale: the run waits nowhere', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.cancel(run.id);
    const park = { ordinal: 0, address: 'inbox', deadline: null };

    expect(await h.store.park(run, park, { sent: 0, parked: park }, [])).toEqual({
      result: 'stale',
      parkCount: 0,
      ready: false,
      wakes: [],
    });
    expect(await h.store.send('inbox', message('m1'))).toEqual({ wakes: [] });
  });

  it('a reservation after the cancel is stale: nothing is taken', async () => {
    const h = await open();
    await h.store.send('inbox', message('m1'));
    const run = await h.started();
    await h.store.cancel(run.id);

    expect(await h.store.reserveMessage(run, 0, 'inbox')).toBe('stale');
    expect(await h.store.mailboxSize('inbox')).toBe(1);
  });

  it("the step's reserved messages go back to the head, in order, waking the runs parked there", async () => {
    const h = await open();
    for (const id of ['m1', 'm2', 'm3']) await h.store.send('inbox', message(id));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');
    await h.store.reserveMessage(run, 1, 'inbox');
    const waiter = await parkOn(h, await h.started(), 'inbox');

    expect(await h.store.cancel(run.id)).toEqual({ result: 'cancelled', wakes: [waiter.wake] });
    expect(await drain(h, 'inbox')).toEqual(['m1', 'm2', 'm3']);
  });

  it("a child's end after its parent was cancelled is ignored; its own commit lands", async () => {
    const h = await open();
    const { parent, step, children } = await fannedOut(h, { total: 2 });
    await h.store.cancel(parent.id);

    expect(await h.store.childEnded(parent.id, step, 1, endReport(h, completedOutcome()))).toEqual({ type: 'ignored' });
    const child = (await h.store.loadForStep(children[0]!, RUNNABLE))!;
    const reply = await h.store.commit(
      child,
      'completed',
      { checkpoint: checkpoint({}), now: h.now() },
      { ...endReport(h, completedOutcome()), parent: child.parent! },
    );
    expect(reply).toEqual({ result: 'committed', wakes: [], parent: { type: 'ignored' } });
    expect(await h.store.outcomesOf(parent.id, 2)).toEqual([undefined, undefined]);
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 0 });
  });

  it('cancelling a child records nothing on its parent', async () => {
    const h = await open();
    const { parent, children } = await fannedOut(h, { total: 2 });

    expect((await h.store.cancel(children[0]!)).result).toBe('cancelled');
    expect(await h.load(parent.id)).toEqual(parent);
    expect(await h.store.fanOutOf(parent.id)).toMatchObject({ ended: 0, failed: 0 });
    expect(await h.store.outcomesOf(parent.id, 2)).toEqual([undefined, undefined]);
  });
});
