/**
 * Store conformance: the budget operations (flow control; BudgetRequest in budget-store.ts).
 * Concurrency leases are counted and given back, expire unless renewed; a sliding window admits
 * at most `max` units and says when the next fits; `spend` corrects an admission's units; a hold
 * refuses everyone until it ends; waiters are served first come, first served per key (a visit
 * that came later never overtakes one that waits), and each admission or release names the next
 * waiter to wake; a throttled run goes back to running when admitted.
 */
import { describe, expect, it } from 'vitest';
import type { BudgetLimit, BudgetRequest } from '@queueflow/runtime/kernel';
import { checkpoint, stores, useStore } from './store-harness.js';

/** A request of waiter `waiter` (its holder unique per call) for `limits`. */
let calls = 0;
function request(waiter: string, limits: BudgetLimit[], extra: Partial<BudgetRequest> = {}): BudgetRequest {
  return { holder: `${waiter}.${++calls}`, waiter, recheckMs: 120_000, limits, ...extra };
}

const ONE_AT_A_TIME: BudgetLimit = { key: 'model', concurrency: 1, units: 1 };

describe.each(stores)('%s: budgets', (name) => {
  const open = useStore(name);

  it('a concurrency lease is held until given back; the release wakes the first waiter', async () => {
    const { store } = await open();
    const a = request('a', [ONE_AT_A_TIME]);
    expect(await store.acquireBudget(a)).toMatchObject({ admitted: true, wakes: [] });
    const refused = await store.acquireBudget(request('b', [ONE_AT_A_TIME]));
    expect(refused).toMatchObject({ admitted: false, key: 'model' });
    expect((await store.budgetOf('model', 1000)).leases).toBe(1);

    expect(await store.releaseBudget([{ key: 'model', holder: a.holder }])).toEqual({ wakes: ['b'] });
    expect(await store.acquireBudget(request('b', [ONE_AT_A_TIME]))).toMatchObject({ admitted: true });
    expect(await store.budgetOf('model', 1000)).toMatchObject({ leases: 1, waiters: [] });
  });

  it('waiters are served in order: a later one never overtakes; a release wakes the first', async () => {
    const { store } = await open();
    const a = request('a', [ONE_AT_A_TIME]);
    await store.acquireBudget(a);
    await store.acquireBudget(request('b', [ONE_AT_A_TIME]));
    await store.acquireBudget(request('c', [ONE_AT_A_TIME]));
    expect((await store.budgetOf('model', 1000)).waiters).toEqual(['b', 'c']);

    expect(await store.releaseBudget([{ key: 'model', holder: a.holder }])).toEqual({ wakes: ['b'] });
    // The slot is free, but c came after b: it waits.
    expect(await store.acquireBudget(request('c', [ONE_AT_A_TIME]))).toMatchObject({ admitted: false, key: 'model' });
    // So does a newcomer.
    expect(await store.acquireBudget(request('d', [ONE_AT_A_TIME]))).toMatchObject({ admitted: false });
    const b = request('b', [ONE_AT_A_TIME]);
    // No room left after b: nobody else is woken.
    expect(await store.acquireBudget(b)).toMatchObject({ admitted: true, wakes: [] });
    expect(await store.releaseBudget([{ key: 'model', holder: b.holder }])).toEqual({ wakes: ['c'] });
    expect(await store.acquireBudget(request('c', [ONE_AT_A_TIME]))).toMatchObject({ admitted: true });
  });

  it('an admission wakes as many waiters as the budget may still have room for', async () => {
    const { store } = await open();
    const three: BudgetLimit = { key: 'three', concurrency: 3, units: 1 };
    const held = [request('a', [three]), request('b', [three]), request('c', [three])];
    for (const r of held) await store.acquireBudget(r);
    for (const w of ['d', 'e', 'f', 'g']) await store.acquireBudget(request(w, [three]));
    expect(await store.releaseBudget([{ key: 'three', holder: held[0]!.holder }])).toEqual({ wakes: ['d'] });
    // A release wakes as many waiters as there are free slots.
    expect(await store.releaseBudget([{ key: 'three', holder: held[1]!.holder }])).toEqual({ wakes: ['d', 'e'] });
    // Two slots free, d first: d gets in and wakes e, the one waiter the last slot has room for.
    expect(await store.acquireBudget(request('d', [three]))).toMatchObject({ admitted: true, wakes: ['e'] });
    // f is behind e: the last slot is e's.
    expect(await store.acquireBudget(request('f', [three]))).toMatchObject({ admitted: false, key: 'three' });
    expect(await store.acquireBudget(request('e', [three]))).toMatchObject({ admitted: true, wakes: [] });
  });

  it('a waiter behind others in a window waits until there is room for all of them', async () => {
    const { store } = await open();
    const rate: BudgetLimit = { key: 'win', rate: { max: 2, perMs: 60_000 }, units: 1 };
    await store.acquireBudget(request('a', [rate]));
    await store.acquireBudget(request('b', [rate]));
    const asked = Date.now();
    const first = await store.acquireBudget(request('c', [rate]));
    const second = await store.acquireBudget(request('d', [rate]));
    const between = Date.now() - asked; // each delay is from its own call's time
    if (first.admitted || second.admitted) throw new Error('admitted into a full window');
    // c waits for a's unit to leave, d for b's too: d is due no earlier than c.
    expect(second.delayMs + between + 1).toBeGreaterThanOrEqual(first.delayMs);
  });

  it('a waiter named among wakes since its refusal is marked woken, once', async () => {
    const { store } = await open();
    const a = request('a', [ONE_AT_A_TIME]);
    await store.acquireBudget(a);
    await store.acquireBudget(request('b', [ONE_AT_A_TIME]));
    expect(await store.budgetWoken('model', 'b')).toBe(false);
    await store.releaseBudget([{ key: 'model', holder: a.holder }]);
    expect(await store.budgetWoken('model', 'b')).toBe(true);
    expect(await store.budgetWoken('model', 'b')).toBe(false);
  });

  it('priority comes before arrival among waiters', async () => {
    const { store } = await open();
    await store.acquireBudget(request('a', [ONE_AT_A_TIME]));
    await store.acquireBudget(request('low', [ONE_AT_A_TIME], { priority: 5 }));
    await store.acquireBudget(request('high', [ONE_AT_A_TIME], { priority: 1 }));
    expect((await store.budgetOf('model', 1000)).waiters).toEqual(['high', 'low']);
  });

  it('a sliding window admits at most max units and says when the next one fits', async () => {
    const { store } = await open();
    const rate: BudgetLimit = { key: 'api', rate: { max: 2, perMs: 60_000 }, units: 1 };
    expect(await store.acquireBudget(request('a', [rate]))).toMatchObject({ admitted: true });
    expect(await store.acquireBudget(request('b', [rate]))).toMatchObject({ admitted: true });
    const refused = await store.acquireBudget(request('c', [rate]));
    if (refused.admitted) throw new Error('a third unit fitted in a window of two');
    expect(refused.key).toBe('api');
    // The first admission leaves the window perMs after it came.
    expect(refused.delayMs).toBeGreaterThan(0);
    expect(refused.delayMs).toBeLessThanOrEqual(60_000);
    expect(await store.budgetOf('api', 60_000)).toMatchObject({ unitsInWindow: 2, waiters: ['c'] });
  });

  it('the window leaves after perMs', async () => {
    const h = await open();
    const rate: BudgetLimit = { key: 'fast', rate: { max: 1, perMs: 150 }, units: 1 };
    expect(await h.store.acquireBudget(request('a', [rate]))).toMatchObject({ admitted: true });
    expect(await h.store.acquireBudget(request('b', [rate]))).toMatchObject({ admitted: false });
    await h.elapse(200);
    expect(await h.store.acquireBudget(request('b', [rate]))).toMatchObject({ admitted: true });
  });

  it('spend corrects the units of an admission: later admissions see them', async () => {
    const { store } = await open();
    const tokens = (units: number): BudgetLimit => ({ key: 'tokens', rate: { max: 1000, perMs: 60_000 }, units });
    const a = request('a', [tokens(100)]);
    await store.acquireBudget(a);
    expect((await store.budgetOf('tokens', 60_000)).unitsInWindow).toBe(100);
    await store.spendBudget({ key: 'tokens', holder: a.holder }, 950);
    expect((await store.budgetOf('tokens', 60_000)).unitsInWindow).toBe(950);
    expect(await store.acquireBudget(request('b', [tokens(100)]))).toMatchObject({ admitted: false, key: 'tokens' });
    expect(await store.acquireBudget(request('b', [tokens(50)]))).toMatchObject({ admitted: true });
  });

  it('a try costing more than max fits only in an empty window', async () => {
    const { store } = await open();
    const big = (units: number): BudgetLimit => ({ key: 'big', rate: { max: 10, perMs: 60_000 }, units });
    expect(await store.acquireBudget(request('a', [big(50)]))).toMatchObject({ admitted: true });
    expect(await store.acquireBudget(request('b', [big(1)]))).toMatchObject({ admitted: false });
  });

  it('a hold refuses everyone until it ends', async () => {
    const { store } = await open();
    await store.holdBudget(['model'], 30_000);
    const state = await store.budgetOf('model', 1000);
    expect(state.heldUntil).toEqual(expect.any(Number));
    const refused = await store.acquireBudget(
      request('a', [{ key: 'model', rate: { max: 100, perMs: 1000 }, units: 1 }]),
    );
    if (refused.admitted) throw new Error('admitted during a hold');
    expect(refused.key).toBe('model');
    expect(refused.delayMs).toBeGreaterThan(25_000);
    expect(refused.delayMs).toBeLessThanOrEqual(30_000);
    // A shorter hold does not shorten it.
    await store.holdBudget(['model'], 10);
    expect((await store.budgetOf('model', 1000)).heldUntil).toBe(state.heldUntil);
  });

  it('a lease expires unless renewed', async () => {
    const h = await open();
    const a = request('a', [ONE_AT_A_TIME], { leaseMs: 150 });
    await h.store.acquireBudget(a);
    const b = request('b', [{ key: 'renewed', concurrency: 1, units: 1 }], { leaseMs: 150 });
    await h.store.acquireBudget(b);
    await h.store.renewBudget([{ key: 'renewed', holder: b.holder }], 60_000);
    await h.elapse(200);
    expect(await h.store.acquireBudget(request('c', [ONE_AT_A_TIME]))).toMatchObject({ admitted: true });
    expect(await h.store.acquireBudget(request('d', [{ key: 'renewed', concurrency: 1, units: 1 }]))).toMatchObject({
      admitted: false,
      key: 'renewed',
    });
  });

  it('refused by one key, admitted by none: nothing is taken from the others', async () => {
    const { store } = await open();
    await store.acquireBudget(request('a', [ONE_AT_A_TIME]));
    const both: BudgetLimit[] = [{ key: 'free', concurrency: 5, units: 1 }, ONE_AT_A_TIME];
    expect(await store.acquireBudget(request('b', both))).toMatchObject({ admitted: false, key: 'model' });
    expect(await store.budgetOf('free', 1000)).toMatchObject({ leases: 0, waiters: [] });
  });

  it('a throttled run goes back to running when admitted', async () => {
    const h = await open();
    const run = await h.started();
    const reply = await h.store.commit(run, 'throttled', {
      checkpoint: checkpoint({ prepared: true }),
      throttledBy: 'model',
      now: h.now(),
    });
    expect(reply.result).toBe('committed');
    const throttled = await h.load(run.id);
    expect(throttled).toMatchObject({ status: 'throttled', throttledBy: 'model', step: 0, attempt: 0 });
    expect(throttled.checkpoint).toBe(checkpoint({ prepared: true }));

    await h.store.acquireBudget(request(`${run.id}-0`, [ONE_AT_A_TIME], { runId: run.id }));
    const running = await h.load(run.id);
    expect(running.status).toBe('running');
    expect(running.throttledBy).toBeUndefined();
  });
});
