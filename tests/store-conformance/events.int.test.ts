/**
 * Store conformance: the store's events (RunEventSource). `ended` when a run that is not a
 * fan-out child ends (completed, failed, cancelled, failed fast by a child); never for a child
 * (its parent hears of it). `cancelled` on a cancel, for any run, before its `ended`.
 *
 * Nothing here waits on time: a spec that expects no event ends a sentinel run afterwards and
 * waits for the sentinel's `ended`, which arrives after anything announced before it.
 */
import { describe, expect, it } from 'vitest';
import type { StoredRun } from '@queueflow/runtime/kernel';
import {
  EventLog,
  RUNNABLE,
  checkpoint,
  completedOutcome,
  endReport,
  errorRecord,
  failedOutcome,
  fannedOut,
  parkOn,
  stores,
  useStore,
  type StoreHarness,
} from './store-harness.js';

/** Subscribes an {@link EventLog} to the store's events. */
async function subscribed(h: StoreHarness): Promise<EventLog> {
  const log = new EventLog();
  await h.events().subscribe(log);
  return log;
}

/** Ends a fresh run and waits for its `ended`: every event announced before has arrived. */
async function sentinel(h: StoreHarness, log: EventLog): Promise<string> {
  const run = await h.started();
  await h.store.commit(run, 'completed', { checkpoint: checkpoint({}), now: h.now() });
  await log.until(`ended:${run.id}`);
  return `ended:${run.id}`;
}

async function childOf(h: StoreHarness, shape: Parameters<typeof fannedOut>[1]) {
  const fanned = await fannedOut(h, shape);
  const child = (await h.store.loadForStep(fanned.children[0]!, RUNNABLE)) as StoredRun;
  return { ...fanned, child };
}

describe.each(stores)('%s: events', (name) => {
  const open = useStore(name);

  it('ended when a run completes', async () => {
    const h = await open();
    const log = await subscribed(h);
    const run = await h.started();
    await h.store.commit(run, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    await log.until(`ended:${run.id}`);
    expect(log.seen).toEqual([`ended:${run.id}`]);
  });

  it('ended when a run fails', async () => {
    const h = await open();
    const log = await subscribed(h);
    const run = await h.started();
    await h.store.commit(run, 'failed', { errorRecords: [errorRecord('x')], runError: { message: 'x' }, now: h.now() });
    await log.until(`ended:${run.id}`);
    expect(log.seen).toEqual([`ended:${run.id}`]);
  });

  it('cancelled, then ended, when a run is cancelled', async () => {
    const h = await open();
    const log = await subscribed(h);
    const run = await h.started();
    await h.store.cancel(run.id);
    await log.until(`ended:${run.id}`);
    expect(log.seen).toEqual([`cancelled:${run.id}`, `ended:${run.id}`]);
  });

  it('nothing for a retry, a next, a park, a fan-out, nor a second cancel', async () => {
    const h = await open();
    const log = await subscribed(h);
    const run = await h.started();
    await h.store.commit(run, 'retry', { errorRecords: [errorRecord('x', { attempt: 0 })], now: h.now() });
    await h.store.commit(await h.load(run.id), 'next', { checkpoint: checkpoint({}), now: h.now() });
    await parkOn(h, await h.load(run.id), 'inbox');
    await fannedOut(h, { total: 2 });
    await h.store.cancel(run.id);
    expect((await h.store.cancel(run.id)).result).toBe('ended');

    const last = await sentinel(h, log);
    expect(log.seen).toEqual([`cancelled:${run.id}`, `ended:${run.id}`, last]);
  });

  it('no ended for a child that completes', async () => {
    const h = await open();
    const log = await subscribed(h);
    const { child } = await childOf(h, { total: 2 });
    const reply = await h.store.commit(
      child,
      'completed',
      { checkpoint: checkpoint({}), now: h.now() },
      { ...endReport(h, completedOutcome()), parent: child.parent! },
    );
    expect(reply.parent?.type).toBe('recorded');

    const last = await sentinel(h, log);
    expect(log.seen).toEqual([last]);
  });

  it('cancelled but no ended for a child that is cancelled', async () => {
    const h = await open();
    const log = await subscribed(h);
    const { child } = await childOf(h, { total: 1 });
    await h.store.cancel(child.id);

    const last = await sentinel(h, log);
    expect(log.seen).toEqual([`cancelled:${child.id}`, last]);
  });

  it('ended for a parent failed fast by a child, not for the child', async () => {
    const h = await open();
    const log = await subscribed(h);
    const { parent, child } = await childOf(h, { total: 2, onItemError: 'fail-fast' });
    const error = errorRecord('child broke', { attempt: 0 });
    const reply = await h.store.commit(
      child,
      'failed',
      { errorRecords: [error], runError: { message: 'child broke' }, now: h.now() },
      { ...endReport(h, { status: 'failed', error }, true), parent: child.parent! },
    );
    expect(reply.parent).toEqual({ type: 'parent-ended' });

    const last = await sentinel(h, log);
    expect(log.seen).toEqual([`ended:${parent.id}`, last]);
  });

  it('ended for a parent failed fast by an item', async () => {
    const h = await open();
    const log = await subscribed(h);
    const { parent, step } = await fannedOut(h, { total: 2, onItemError: 'fail-fast' });
    await h.store.childEnded(parent.id, step, 1, endReport(h, failedOutcome(), true));
    await log.until(`ended:${parent.id}`);
    expect(log.seen).toEqual([`ended:${parent.id}`]);
  });

  it('an unsubscribed listener hears no more', async () => {
    const h = await open();
    const kept = await subscribed(h);
    const dropped = new EventLog();
    const unsubscribe = await h.events().subscribe(dropped);
    const first = await sentinel(h, kept);
    await dropped.until(first);

    unsubscribe();
    const second = await sentinel(h, kept);
    expect(kept.seen).toEqual([first, second]);
    expect(dropped.seen).toEqual([first]);
  });
});
