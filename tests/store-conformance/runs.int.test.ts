/**
 * Store conformance: a run's record. `create` writes a `queued` record; `discard` removes one;
 * `load` and `position` read it; `loadForStep` reads it for a step and marks a queued run
 * `running` only when its flow and graph fingerprint are among those the worker runs; a run made
 * `takenBy` a worker is `running` at once, its first step among the worker's taken tasks. A store
 * keeps values, not the caller's objects: what it was given is stored as it was at the call, and
 * a record it returns is the caller's to change.
 */
import { describe, expect, it } from 'vitest';
import type { RunError } from '@queueflow/runtime';
import { newRunRecord, type ParkRequest, type StepReplay, type StepTarget } from '@queueflow/runtime/kernel';
import {
  FINGERPRINT,
  FLOW,
  PARENT_ERROR,
  RUNNABLE,
  checkpoint,
  endReport,
  failedOutcome,
  fannedOut,
  runsFanOut,
  stores,
  target,
  useStore,
  commitFanOut,
} from './store-harness.js';

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
      parkCount: 0,
      replay: { sent: 0 },
    });
  });

  it('create with takenBy writes a running record, as newRunRecord makes it, and the first step taken', async () => {
    const h = await open();
    const run = { ...h.newRun({ checkpoint: checkpoint({ n: 1 }), target: target('a') }), takenBy: 'w1' };
    await h.store.create(run);

    expect(await h.store.load(run.id)).toEqual(newRunRecord(run));
    expect(await h.store.load(run.id)).toMatchObject({ status: 'running', startedAt: run.now });
    // Should w1 die before it runs the step, a survivor claims the step's task.
    expect(await h.store.claimTaken('w2')).toEqual([]);
    expect(await h.store.claimTaken('w1')).toEqual([`${run.id}-0`]);
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

  it("a record a read returns is the caller's: changing it changes nothing stored", async () => {
    const h = await open();
    const { children } = await fannedOut(h, { total: 1 });
    const child = (await h.store.loadForStep(children[0]!, RUNNABLE))!;
    const park: ParkRequest = { ordinal: 0, address: 'inbox', deadline: null };
    await h.store.park(child, park, { sent: 1, parked: park, timedOut: [2] }, []);
    const failed = await h.started();
    await h.store.commit(failed, 'failed', { runError: { message: 'broke' }, now: h.now() });

    for (const id of [child.id, failed.id]) {
      const before = structuredClone(await h.load(id));
      const [loaded, recorded, listed] = [
        await h.load(id),
        (await h.store.record(id))!.run,
        await h.store.list({ limit: 10 }),
      ];
      for (const run of [loaded, recorded, ...listed]) {
        run.target.node = 'changed';
        run.replay.sent = 99;
        if (run.replay.parked) run.replay.parked.address = 'changed';
        run.replay.timedOut?.push(7);
        if (run.parent) run.parent.index = 99;
        if (run.error) run.error.message = 'changed';
      }
      expect(await h.load(id)).toEqual(before);
    }
  });

  it('what a transition is given is stored as it was at the call', async () => {
    const h = await open();
    const first: StepTarget = target('a');
    const run = h.newRun({ target: first });
    await h.store.create(run);
    first.node = 'changed';
    expect((await h.load(run.id)).target).toEqual(target('a'));

    const next: StepTarget = target('b');
    await h.store.commit((await h.store.loadForStep(run.id, RUNNABLE))!, 'next', { target: next, now: h.now() });
    next.node = 'changed';
    expect((await h.load(run.id)).target).toEqual(target('b'));

    const park: ParkRequest = { ordinal: 0, address: 'inbox', deadline: null };
    const replay: StepReplay = { sent: 1, parked: park, timedOut: [0] };
    await h.store.park(await h.load(run.id), park, replay, []);
    replay.sent = 99;
    park.address = 'changed';
    replay.timedOut!.push(1);
    expect((await h.load(run.id)).replay).toEqual({ sent: 1, parked: { ...park, address: 'inbox' }, timedOut: [0] });

    const runError: RunError = { message: 'broke' };
    await h.store.commit(await h.load(run.id), 'failed', { runError, now: h.now() });
    runError.message = 'changed';
    expect((await h.load(run.id)).error).toEqual({ message: 'broke' });

    const parent = await h.started();
    const fields = runsFanOut(h, { total: 2, onItemError: 'fail-fast' });
    await commitFanOut(h, parent, fields);
    fields.target.node = 'changed';
    fields.childTarget!.node = 'changed';
    expect((await h.load(parent.id)).target).toEqual({ node: FLOW, maxAttempts: 1 });
    const [child0, child1] = [await h.load(`${parent.id}.1.0`), await h.load(`${parent.id}.1.1`)];
    expect([child0.target, child1.target]).toEqual([target('child-start'), target('child-start')]);

    const report = endReport(h, failedOutcome(), true);
    await h.store.childEnded(parent.id, 1, 0, report);
    report.parentError.message = 'changed';
    expect((await h.load(parent.id)).error).toEqual(PARENT_ERROR);
  });
});
