/**
 * Store conformance: `commit`, by mode (CommitMode in run-store.ts). A commit lands only if the
 * run still stands where the step started (same step counter, same park count) and has not
 * ended; otherwise it is `stale` and writes nothing. `next` and `completed` move the step
 * counter on; `retry` counts a failed try; `failed` writes only the error. Every landed commit
 * appends its error records (capped) and conflicts, and clears a noted refusal.
 */
import { describe, expect, it } from 'vitest';
import type { CommitMode } from '@queueflow/runtime/kernel';
import { MAX_ERRORS, checkpoint, errorRecord, stores, target, useStore } from './store-harness.js';

const modes: CommitMode[] = ['next', 'retry', 'completed', 'failed'];

describe.each(stores)('%s: commit', (name) => {
  const open = useStore(name);

  it('next writes the checkpoint and target, moves the step counter on and resets the attempt', async () => {
    const h = await open();
    const run = await h.started();
    const now = h.now();

    const reply = await h.store.commit(run, 'next', { checkpoint: checkpoint({ x: 1 }), target: target('b'), now });
    expect(reply).toEqual({ result: 'committed', wakes: [] });
    expect(await h.load(run.id)).toEqual({
      ...run,
      status: 'running',
      step: 1,
      attempt: 0,
      checkpoint: checkpoint({ x: 1 }),
      target: target('b'),
      updatedAt: now,
    });
  });

  it('next without a checkpoint or target keeps the stored ones', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'next', { now: h.now() });
    expect(await h.load(run.id)).toMatchObject({ step: 1, checkpoint: run.checkpoint, target: run.target });
  });

  it('a commit of a queued run starts it: running, startedAt is the commit time', async () => {
    const h = await open();
    const run = await h.created();
    const now = h.now();
    await h.store.commit(run, 'next', { checkpoint: checkpoint({ x: 1 }), now });
    expect(await h.load(run.id)).toMatchObject({ status: 'running', step: 1, startedAt: now, updatedAt: now });
  });

  it('a commit from a stale step counter is stale and writes nothing', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'next', { checkpoint: checkpoint({ first: true }), now: h.now() });
    const after = await h.load(run.id);

    for (const mode of modes) {
      const reply = await h.store.commit(run, mode, {
        checkpoint: checkpoint({ second: true }),
        errorRecords: [errorRecord('late')],
        runError: { message: 'late' },
        conflicts: [{ path: '/x', children: [0, 1] }],
        now: h.now(),
      });
      expect(reply).toEqual({ result: 'stale', wakes: [] });
    }
    expect(await h.load(run.id)).toEqual(after);
    const record = await h.store.record(run.id);
    expect(record?.errors).toEqual([]);
    expect(record?.conflicts).toEqual([]);
  });

  it('a commit from a stale park count is stale and writes nothing', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.park(run, { ordinal: 0, address: 'inbox', deadline: null }, { sent: 0 }, []);
    const parked = await h.load(run.id);
    expect(parked.parkCount).toBe(1);

    const reply = await h.store.commit(run, 'next', { checkpoint: checkpoint({ late: true }), now: h.now() });
    expect(reply.result).toBe('stale');
    expect(await h.load(run.id)).toEqual(parked);

    const woken = await h.store.commit(parked, 'next', { checkpoint: checkpoint({ woken: true }), now: h.now() });
    expect(woken.result).toBe('committed');
  });

  it('a commit of an unknown run is missing', async () => {
    const h = await open();
    const run = h.newRun();
    const ghost = { ...(await h.created()), id: run.id };
    expect(await h.store.commit(ghost, 'next', { now: h.now() })).toEqual({ result: 'missing', wakes: [] });
    expect(await h.store.load(run.id)).toBeUndefined();
  });

  it.each(['completed', 'failed'] as const)('a commit of a run that has %s is stale', async (ending) => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, ending, {
      checkpoint: checkpoint({ end: true }),
      runError: { message: 'x' },
      now: h.now(),
    });
    const ended = await h.load(run.id);

    for (const mode of modes) {
      expect((await h.store.commit(ended, mode, { checkpoint: checkpoint({}), now: h.now() })).result).toBe('stale');
    }
    expect(await h.load(run.id)).toEqual(ended);
  });

  it('retry writes the checkpoint, counts the try and stays at the step', async () => {
    const h = await open();
    const run = await h.started();
    const now = h.now();

    const reply = await h.store.commit(run, 'retry', {
      checkpoint: checkpoint({ prepRes: 1 }),
      target: target('elsewhere'),
      errorRecords: [errorRecord('try 0', { attempt: 0 })],
      now,
    });
    expect(reply).toEqual({ result: 'committed', wakes: [] });
    const retried = await h.load(run.id);
    expect(retried).toEqual({ ...run, attempt: 1, checkpoint: checkpoint({ prepRes: 1 }), updatedAt: now });

    await h.store.commit(retried, 'retry', { errorRecords: [errorRecord('try 1', { attempt: 1 })], now: h.now() });
    expect(await h.load(run.id)).toMatchObject({ step: 0, attempt: 2, checkpoint: checkpoint({ prepRes: 1 }) });
    expect((await h.store.record(run.id))?.errors.map((e) => e.message)).toEqual(['try 0', 'try 1']);
  });

  it('retry keeps when the next try is due (retryAt) until the step commits', async () => {
    const h = await open();
    const run = await h.started();
    const now = h.now();
    await h.store.commit(run, 'retry', { errorRecords: [errorRecord('try 0')], retryAt: now + 2000, now });
    const retried = (await h.load(run.id))!;
    expect(retried.retryAt).toBe(now + 2000);
    await h.store.commit(retried, 'retry', { errorRecords: [errorRecord('try 1')], retryAt: now + 5000, now });
    const again = (await h.load(run.id))!;
    expect(again.retryAt).toBe(now + 5000);
    await h.store.commit(again, 'next', { checkpoint: checkpoint({}), target: target('b'), now: h.now() });
    expect((await h.load(run.id))!.retryAt).toBeUndefined();
  });

  it('completed moves the step counter on and ends the run with its last action', async () => {
    const h = await open();
    const run = await h.started();
    const now = h.now();

    const reply = await h.store.commit(run, 'completed', {
      checkpoint: checkpoint({ done: true }, 'finish'),
      target: target('none'),
      lastAction: 'finish',
      now,
    });
    expect(reply).toEqual({ result: 'committed', wakes: [] });
    expect(await h.load(run.id)).toEqual({
      ...run,
      status: 'completed',
      step: 1,
      attempt: 0,
      checkpoint: checkpoint({ done: true }, 'finish'),
      target: target('none'),
      lastAction: 'finish',
      updatedAt: now,
      finishedAt: now,
    });
  });

  it('completed without a last action leaves none', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    const ended = await h.load(run.id);
    expect(ended.status).toBe('completed');
    expect(ended).not.toHaveProperty('lastAction');
  });

  it('failed writes the error, not the checkpoint, and counts the failed try', async () => {
    const h = await open();
    const run = await h.started();
    const now = h.now();

    const reply = await h.store.commit(run, 'failed', {
      checkpoint: checkpoint({ halfDone: true }),
      target: target('elsewhere'),
      errorRecords: [errorRecord('try 0', { attempt: 0 }), errorRecord('try 1', { attempt: 1 })],
      runError: { message: 'try 1', attempts: 2 },
      outbox: [{ address: 'out', message: { id: 'm', body: 1, sentAt: 0 } }],
      now,
    });
    expect(reply).toEqual({ result: 'committed', wakes: [] });
    expect(await h.load(run.id)).toEqual({
      ...run,
      status: 'failed',
      attempt: 2,
      error: { message: 'try 1', attempts: 2 },
      updatedAt: now,
      finishedAt: now,
    });
    expect((await h.store.record(run.id))?.errors.map((e) => e.message)).toEqual(['try 0', 'try 1']);
    expect(await h.store.mailboxSize('out')).toBe(0);
  });

  it('failed by an error without a try index keeps the attempt count', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'retry', { errorRecords: [errorRecord('try 0', { attempt: 0 })], now: h.now() });
    const retried = await h.load(run.id);
    await h.store.commit(retried, 'failed', {
      errorRecords: [errorRecord('in post')],
      runError: { message: 'in post' },
      now: h.now(),
    });
    expect(await h.load(run.id)).toMatchObject({ status: 'failed', attempt: 1, error: { message: 'in post' } });
  });

  it('error records of every commit are appended, oldest first, the last 50 kept', async () => {
    const h = await open();
    let run = await h.started();
    for (let batch = 0; batch < 6; batch++) {
      const records = Array.from({ length: 10 }, (_, i) => errorRecord(`e${batch * 10 + i}`));
      await h.store.commit(run, 'retry', { errorRecords: records, now: h.now() });
      run = await h.load(run.id);
    }
    const errors = (await h.store.record(run.id))!.errors;
    expect(errors).toHaveLength(MAX_ERRORS);
    expect(errors.map((e) => e.message)).toEqual(Array.from({ length: 50 }, (_, i) => `e${i + 10}`));
    expect(errors[0]).toEqual(errorRecord('e10'));
  });

  it('conflicts of every commit are appended in order', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'next', { conflicts: [{ path: '/a', children: [0, 2] }], now: h.now() });
    const second = await h.load(run.id);
    await h.store.commit(second, 'completed', {
      conflicts: [
        { path: '/b', children: [1, 3] },
        { path: '/c/d', children: [0, 1] },
      ],
      now: h.now(),
    });
    expect((await h.store.record(run.id))?.conflicts).toEqual([
      { path: '/a', children: [0, 2] },
      { path: '/b', children: [1, 3] },
      { path: '/c/d', children: [0, 1] },
    ]);
  });

  it.each(modes)('a refusal noted on the step is cleared by a %s commit', async (mode) => {
    const h = await open();
    const run = await h.started();
    await h.store.noteRefusal(run.id, 'no such flow here');
    expect((await h.load(run.id)).refusal).toBe('no such flow here');

    await h.store.commit(run, mode, { checkpoint: checkpoint({}), runError: { message: 'x' }, now: h.now() });
    expect(await h.load(run.id)).not.toHaveProperty('refusal');
  });

  it('a stale commit leaves a noted refusal', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'next', { now: h.now() });
    await h.store.noteRefusal(run.id, 'other code');
    await h.store.commit(run, 'next', { now: h.now() });
    expect((await h.load(run.id)).refusal).toBe('other code');
  });
});
