/**
 * The `taken-over` entries of a run's event log at the Redis store (load-run.lua,
 * note-takeover.lua; the LocalEngine has no workers to take over). A step noted as held by a
 * worker whose heartbeat lapsed (`noteTakeover`) and a task BullMQ's stalled-job check gave back
 * (`loadForStep`'s `stalled`) each log one entry in the next load by another worker: from the
 * worker that held the step, by the one that loads it. None from the loader itself, none for an
 * ended run, one per recovery however often the task is loaded, one when both say the same.
 */
import { describe, expect, it } from 'vitest';
import { decodeRunEvent, type StalledTask } from '@queueflow/runtime/kernel';
import { checkpoint, RUNNABLE, target, useStore, type StoreHarness } from '../store-conformance/store-harness.js';

/** The run's `taken-over` entries, without their times. */
async function takenOver(h: StoreHarness, runId: string): Promise<unknown[]> {
  const events = ((await h.store.events(runId)) ?? []).map(decodeRunEvent);
  return events.filter((event) => event?.kind === 'taken-over').map((event) => ({ ...event, at: undefined }));
}

/** Loads the run for a step as worker `worker` would, for a task given back by a stall when `stalled`. */
function load(h: StoreHarness, runId: string, worker: string, stalled?: StalledTask) {
  return h.store.loadForStep(runId, RUNNABLE, undefined, worker, stalled);
}

/** Commits the run's current step as worker `worker` did (its history record names it). */
async function commitBy(h: StoreHarness, runId: string, worker: string): Promise<void> {
  const run = await h.load(runId);
  const record = JSON.stringify({ s: run.step, n: 'first', t: 1, at: 0, ms: 0, u: [], f: [], w: worker });
  const fields = { checkpoint: checkpoint({ step: run.step + 1 }), target: target('next'), record, now: h.now() };
  expect((await h.store.commit(run, 'next', fields)).result).toBe('committed');
}

const entry = (step: number, from: string, by: string) => ({ at: undefined, step, kind: 'taken-over', from, by });

describe.each(['RedisRunStore', 'RedisRunStore on a cluster'] as const)('%s: taken-over entries', (name) => {
  const open = useStore(name);

  it("a lapsed worker's step: logged by the next load by another worker, once", async () => {
    const h = await open();
    const run = await h.started();
    await h.store.noteTakeover!(run.id, 'w1');
    await load(h, run.id, 'w1'); // its own worker: no takeover, the note stays
    await load(h, run.id, 'w2');
    await load(h, run.id, 'w3');
    expect(await takenOver(h, run.id)).toEqual([entry(0, 'w1', 'w2')]);
  });

  it('a lapsed worker whose step committed meanwhile took nothing over', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.noteTakeover!(run.id, 'w1');
    await commitBy(h, run.id, 'w1');
    await load(h, run.id, 'w2');
    expect(await takenOver(h, run.id)).toEqual([]);
  });

  it('a stalled task: from the worker that held it, by the loader, once per recovery', async () => {
    const h = await open();
    const run = await h.started();
    const stalled = { key: `${run.id}-0:1`, step: 0, from: 'w1' };
    await load(h, run.id, 'w2', stalled);
    await load(h, run.id, 'w3', stalled); // the same recovery delivered again (a deferral)
    await load(h, run.id, 'w3', { ...stalled, key: `${run.id}-0:2`, from: 'w2' }); // it stalled again
    expect(await takenOver(h, run.id)).toEqual([entry(0, 'w1', 'w2'), entry(0, 'w2', 'w3')]);
  });

  it('a stalled task whose holder is not known: from the worker of the newest step record if the run went past its step', async () => {
    const h = await open();
    const run = await h.started();
    await commitBy(h, run.id, 'w1'); // the task's worker ran the run's next step in it
    await load(h, run.id, 'w2', { key: `${run.id}-0:1`, step: 0 });
    await load(h, run.id, 'w1', { key: `${run.id}-1:1`, step: 1 }); // at the task's own step: whose, nothing says
    expect(await takenOver(h, run.id)).toEqual([entry(1, 'w1', 'w2')]);
  });

  it('nothing from the loader itself, nor for an ended run', async () => {
    const h = await open();
    const run = await h.started();
    await load(h, run.id, 'w1', { key: `${run.id}-0:1`, step: 0, from: 'w1' });
    const ended = await h.started();
    await h.store.commit(ended, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    await h.store.noteTakeover!(ended.id, 'w1');
    await load(h, ended.id, 'w2', { key: `${ended.id}-0:1`, step: 0, from: 'w1' });
    expect(await takenOver(h, run.id)).toEqual([]);
    expect(await takenOver(h, ended.id)).toEqual([]);
  });

  it('one entry when the load of a stalled task also finds the lapsed worker noted', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.noteTakeover!(run.id, 'w1');
    await load(h, run.id, 'w2', { key: `${run.id}-0:1`, step: 0, from: 'w1' });
    await load(h, run.id, 'w3', { key: `${run.id}-0:1`, step: 0, from: 'w1' });
    expect(await takenOver(h, run.id)).toEqual([entry(0, 'w1', 'w2')]);
  });
});
