/**
 * Store conformance: large agent states (the claim check, agent-store.ts). A state that references
 * values stored apart claims them for its key in the transition that stores it (endTurn, seedAgent),
 * in place of the values its previous state claimed; a failed turn changes no claim; the key's
 * claims go with it (deleteAgent). A value another holder (a run) claims outlives the key.
 */
import { describe, expect, it } from 'vitest';
import type { ValueClaim } from '@queueflow/runtime/kernel';
import { message, stores, useStore } from './store-harness.js';

const REF = 'agent:big/k1';
const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const TEXT_A = JSON.stringify('the first large value');
const TEXT_B = JSON.stringify({ the: 'second large value' });
const stateOf = (hash: string): string => `{"doc":{"$qfValue":"${hash}"},"n":1}`;
const claimOf = (texts: Record<string, string>, refs = Object.keys(texts)): ValueClaim => ({ refs, texts });
const first = { state: '{"n":0}', version: 1, incarnation: 'inc1' };

describe.each(stores)('%s: agent states with values stored apart', (name) => {
  const open = useStore(name);

  it("a completed turn claims its state's values; the next state's claims replace them", async () => {
    const { agents, store, now } = await open();
    for (const id of ['m1', 'm2', 'm3']) await store.send(REF, message(id));
    await agents.activateAgent(REF, first, now());

    const ended = await agents.endTurn(REF, {
      ...{ runId: 'inc1t1', status: 'completed', messageId: 'm1', version: 1, now: now() },
      state: stateOf(A),
      values: claimOf({ [A]: TEXT_A }),
    });
    expect(ended.next?.state).toBe(stateOf(A)); // the stored form: the reference, not the text
    expect((await agents.loadAgent(REF))?.state).toBe(stateOf(A));
    expect(await store.values([A])).toEqual([TEXT_A]);

    // A failed turn leaves the state and its claims.
    await agents.endTurn(REF, {
      ...{ runId: 'inc1t2', status: 'failed', messageId: 'm2', now: now() },
      error: { message: 'boom' },
    });
    expect(await store.values([A])).toEqual([TEXT_A]);

    // The next state references B only: A goes (nothing else claims it).
    await agents.endTurn(REF, {
      ...{ runId: 'inc1t3', status: 'completed', messageId: 'm3', version: 1, now: now() },
      state: stateOf(B),
      values: claimOf({ [B]: TEXT_B }),
    });
    expect(await store.values([A, B])).toEqual([undefined, TEXT_B]);
  });

  it('a state that keeps a value keeps it; one without values lets all go', async () => {
    const { agents, store, now } = await open();
    for (const id of ['m1', 'm2', 'm3']) await store.send(REF, message(id));
    await agents.activateAgent(REF, first, now());
    const end = (runId: string, messageId: string) => ({
      runId,
      status: 'completed' as const,
      messageId,
      version: 1,
      now: now(),
    });
    await agents.endTurn(REF, { ...end('inc1t1', 'm1'), state: stateOf(A), values: claimOf({ [A]: TEXT_A }) });
    // Stored already: the claim brings no text.
    await agents.endTurn(REF, { ...end('inc1t2', 'm2'), state: stateOf(A), values: claimOf({}, [A]) });
    expect(await store.values([A])).toEqual([TEXT_A]);
    await agents.endTurn(REF, { ...end('inc1t3', 'm3'), state: '{"n":3}' });
    expect(await store.values([A])).toEqual([undefined]);
  });

  it("deleteAgent lets its state's values go; a value a run claims outlives the key", async () => {
    const h = await open();
    expect(
      await h.agents.seedAgent(REF, { ...first, state: stateOf(A), values: claimOf({ [A]: TEXT_A, [B]: TEXT_B }) }),
    ).toBe(true);
    expect((await h.agents.loadAgent(REF))?.state).toBe(stateOf(A));
    expect(await h.store.values([A, B])).toEqual([TEXT_A, TEXT_B]);
    const run = await h.created({ values: claimOf({}, [B]) }); // a turn's run holding B too

    await h.agents.deleteAgent(REF);
    expect(await h.store.values([A, B])).toEqual([undefined, TEXT_B]);
    await h.store.discard(run.id);
    expect(await h.store.values([B])).toEqual([undefined]);
  });

  it('a seed that finds the key made claims nothing', async () => {
    const h = await open();
    await h.agents.seedAgent(REF, first);
    expect(await h.agents.seedAgent(REF, { ...first, state: stateOf(A), values: claimOf({ [A]: TEXT_A }) })).toBe(
      false,
    );
    expect(await h.store.values([A])).toEqual([undefined]);
  });
});
