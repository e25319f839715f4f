/**
 * Store conformance: a run's record. `create` writes a `queued` record; `discard` removes one;
 * `load` and `position` read it; `loadForStep` reads it for a step and marks a queued run
 * `running` only when its flow and graph fingerprint are among those the worker runs.
 */
import { describe, expect, it } from 'vitest';
import { FINGERPRINT, FLOW, RUNNABLE, checkpoint, stores, target, useStore } from './store-harness.js';

describe.each(stores)('%s: create, discard, load, position, loadForStep', (name) => {
  const open = useStore(name);

  it('create writes a queued record at step 0 that load returns whole', async () => {
    const h = await open();
    const run = h.newRun({ checkpoint: checkpoint({ hello: 'world' }), target: target('a', 3) });
    await h.store.create(run);

    expect(await h.store.load(run.id)).toEqual({
      id: run.id,
      flow: FLOW,
      fingerprint: FINGERPRINT,
      status: 'queued',
      step: 0,
      attempt: 0,
      checkpoint: run.checkpoint,
      target: { node: 'a', maxAttempts: 3 },
      createdAt: run.now,
      updatedAt: run.now,
      cancel: false,
      parkCount: 0,
      replay: { sent: 0 },
    });
  });

  it('an unknown run is undefined to load, position, loadForStep and record', async () => {
    const h = await open();
    expect(await h.store.load('nope')).toBeUndefined();
    expect(await h.store.position('nope')).toBeUndefined();
    expect(await h.store.loadForStep('nope', RUNNABLE)).toBeUndefined();
    expect(await h.store.record('nope')).toBeUndefined();
  });

  it('position gives the status and step counter alone', async () => {
    const h = await open();
    const run = await h.created();
    expect(await h.store.position(run.id)).toEqual({ status: 'queued', step: 0 });

    const started = await h.store.loadForStep(run.id, RUNNABLE);
    await h.store.commit(started!, 'next', { checkpoint: checkpoint({ step: 1 }), target: target('b'), now: h.now() });
    expect(await h.store.position(run.id)).toEqual({ status: 'running', step: 1 });
  });

  it('discard removes the run: load, position and list no longer find it', async () => {
    const h = await open();
    const kept = await h.created();
    const discarded = await h.created();
    await h.store.discard(discarded.id);

    expect(await h.store.load(discarded.id)).toBeUndefined();
    expect(await h.store.position(discarded.id)).toBeUndefined();
    expect((await h.store.list({ limit: 10 })).map((run) => run.id)).toEqual([kept.id]);
  });

  it('loadForStep marks a queued run running when its flow and fingerprint are runnable', async () => {
    const h = await open();
    const run = await h.created();

    const loaded = await h.store.loadForStep(run.id, RUNNABLE);
    expect(loaded).toMatchObject({ id: run.id, status: 'running', step: 0, checkpoint: run.checkpoint });
    expect(loaded?.startedAt).toEqual(expect.any(Number));
    expect(await h.load(run.id)).toEqual(loaded);
  });

  it('loadForStep finds a runnable pair among several', async () => {
    const h = await open();
    const run = await h.created();
    const loaded = await h.store.loadForStep(run.id, [
      ['other', FINGERPRINT],
      [FLOW, 'fp-0'],
      [FLOW, FINGERPRINT],
    ]);
    expect(loaded?.status).toBe('running');
  });

  it.each([
    ['another fingerprint of the flow', [[FLOW, 'fp-2']]],
    ['another flow with the same fingerprint', [['other', FINGERPRINT]]],
    [
      'the flow and the fingerprint in different pairs',
      [
        [FLOW, 'fp-2'],
        ['other', FINGERPRINT],
      ],
    ],
    ['no runnable flows at all', []],
  ] as const)('loadForStep leaves a queued run queued for a worker with %s', async (_case, runnable) => {
    const h = await open();
    const run = await h.created();

    const loaded = await h.store.loadForStep(run.id, runnable);
    expect(loaded).toEqual(run);
    expect(await h.load(run.id)).toEqual(run);
  });

  it('loadForStep changes nothing on a run that is not queued', async () => {
    const h = await open();
    const running = await h.started();
    expect(await h.store.loadForStep(running.id, RUNNABLE)).toEqual(running);

    const ended = await h.started();
    await h.store.commit(ended, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    const before = await h.load(ended.id);
    expect(await h.store.loadForStep(ended.id, RUNNABLE)).toEqual(before);
  });
});
