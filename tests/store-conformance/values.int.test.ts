/**
 * Store conformance: values stored apart (the claim check, `RunStore.values`). A transition
 * whose claim brings a value's text stores it once under its hash; every transition that writes
 * a stored form claims its values for its run (create, commit, fanOut; a child's end claims its
 * outcome's values for the parent); a value is kept while a run that claimed it is kept, and goes
 * with the last of them (here: `discard`, which both stores apply at once). A transition that
 * does not apply (stale) claims nothing.
 */
import { describe, expect, it } from 'vitest';
import type { ValueClaim } from '@queueflow/runtime/kernel';
import {
  checkpoint,
  completedOutcome,
  endReport,
  fannedOut,
  runsFanOut,
  stores,
  target,
  useStore,
  commitFanOut,
} from './store-harness.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const TEXT_A = JSON.stringify('the first large value');
const TEXT_B = JSON.stringify({ the: 'second large value' });

const claimOf = (texts: Record<string, string>, refs = Object.keys(texts)): ValueClaim => ({ refs, texts });

describe.each(stores)('%s: values stored apart', (name) => {
  const open = useStore(name);

  it('create stores the texts its claim brings; values reads them by hash, undefined for others', async () => {
    const h = await open();
    await h.created({ values: claimOf({ [A]: TEXT_A, [B]: TEXT_B }) });

    expect(await h.store.values([B, A, 'c'.repeat(64)])).toEqual([TEXT_B, TEXT_A, undefined]);
    expect(await h.store.values([])).toEqual([]);
  });

  it('stores a hash once: a later claim with another text leaves the first', async () => {
    const h = await open();
    await h.created({ values: claimOf({ [A]: TEXT_A }) });
    await h.created({ values: claimOf({ [A]: JSON.stringify('not the same') }) });

    expect(await h.store.values([A])).toEqual([TEXT_A]);
  });

  it('keeps a value while a run that claimed it is kept: it goes with the last one', async () => {
    const h = await open();
    const first = await h.created({ values: claimOf({ [A]: TEXT_A }) });
    const second = await h.created({ values: claimOf({}, [A]) }); // stored already: no text

    await h.store.discard(first.id);
    expect(await h.store.values([A])).toEqual([TEXT_A]);
    await h.store.discard(second.id);
    expect(await h.store.values([A])).toEqual([undefined]);
  });

  it('commit claims the values of the checkpoint it writes; a stale commit claims nothing', async () => {
    const h = await open();
    const run = await h.started();
    const fields = { checkpoint: checkpoint({ n: 2 }), target: target('next'), now: h.now() };

    expect((await h.store.commit(run, 'next', { ...fields, values: claimOf({ [A]: TEXT_A }) })).result).toBe(
      'committed',
    );
    expect((await h.store.commit(run, 'next', { ...fields, values: claimOf({ [B]: TEXT_B }) })).result).toBe('stale');
    expect(await h.store.values([A, B])).toEqual([TEXT_A, undefined]);
  });

  it('fanOut claims the values of the checkpoint and snapshot it writes', async () => {
    const h = await open();
    const run = await h.started();
    const reply = await commitFanOut(h, run, { ...runsFanOut(h, { total: 1 }), values: claimOf({ [A]: TEXT_A }) });

    expect(reply.result).toBe('committed');
    expect(await h.store.values([A])).toEqual([TEXT_A]);
    await h.store.discard(run.id);
    expect(await h.store.values([A])).toEqual([undefined]);
  });

  it("a child's end claims its outcome's values for the parent: they outlive the child", async () => {
    const h = await open();
    const { parent, step, children } = await fannedOut(h, { total: 2 });
    const child = await h.store.loadForStep(children[0]!, [[parent.flow, parent.fingerprint]]);
    const commit = await h.store.commit(
      child!,
      'completed',
      { checkpoint: checkpoint({ n: 1 }), values: claimOf({ [A]: TEXT_A }), now: h.now() },
      { parent: { id: parent.id, step, index: 0 }, ...endReport(h, completedOutcome()), values: [A] },
    );
    expect(commit.parent).toEqual({ type: 'recorded', start: undefined });

    await h.store.discard(children[0]!);
    expect(await h.store.values([A])).toEqual([TEXT_A]);
    await h.store.discard(parent.id);
    expect(await h.store.values([A])).toEqual([undefined]);
  });

  it("childEnded (a redelivered end) claims the outcome's values for the parent", async () => {
    const h = await open();
    const child = await h.created({ values: claimOf({ [B]: TEXT_B }) }); // holds B, as a child would
    const { parent, step } = await fannedOut(h, { total: 2 });
    await h.store.childEnded(parent.id, step, 1, { ...endReport(h, completedOutcome()), values: [B] });

    await h.store.discard(child.id);
    expect(await h.store.values([B])).toEqual([TEXT_B]);
    await h.store.discard(parent.id);
    expect(await h.store.values([B])).toEqual([undefined]);
  });

  it(`runs that claim nothing store nothing (${name})`, async () => {
    const h = await open();
    const run = await h.started();
    await h.store.commit(run, 'completed', { checkpoint: checkpoint({ n: 1 }), now: h.now() });

    expect(await h.store.values([A])).toEqual([undefined]);
  });
});
