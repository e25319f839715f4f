/**
 * Contract: large agent states use the claim check (issue 25, "Large states use the claim
 * check"). A member of an agent's state whose JSON is over `largeValueBytes` (default 256 KiB) is
 * stored once, apart, like a run's large values: the key's stored state holds a reference, so on
 * Redis the agent's hash stays small, and the value is claimed for the key while its state
 * references it. Turns, `engine.agent`, `query` and `agentHistory` see the value itself.
 * Deleting the key lets go of its claim (the value then lives only as long as the runs of its
 * turns that hold it); an idle key kept for `idleTtlMs` lets its values expire with it.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { defineAgent, Node, type JsonObject } from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

interface Doc extends JsonObject {
  doc?: string;
  turns: number;
  lengths: number[];
}

/**
 * The engines' `largeValueBytes` here, and a member over it many times: the claim check's rule is
 * the same at any size, and a member of MBs only makes the test slow (hashing, copying).
 */
const LARGE_VALUE_BYTES = 4096;
const SIZE = 64 * 1024;
const big = (tag: string): string => `${tag}:${'x'.repeat(SIZE - tag.length - 1)}`;
const hashOf = (value: string): string => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/** Called inside a turn whose message is `{ op: 'hook' }` (a test looks at the store then). */
let duringTurn: (() => Promise<void>) | undefined;

/** `load` puts a large `doc` in the state, `count` reads its length, `drop` deletes it. */
class Work extends Node<Doc> {
  override async prep(shared: Doc): Promise<void> {
    const body = this.message!.body as { op: 'load' | 'count' | 'drop' | 'hook'; tag?: string };
    if (body.op === 'load') shared.doc = big(body.tag ?? 'doc');
    if (body.op === 'count') shared.lengths.push(shared.doc?.length ?? -1);
    if (body.op === 'drop') delete shared.doc;
    if (body.op === 'hook') await duringTurn?.();
    shared.turns++;
  }
}

const docs = defineAgent<Doc>('big-doc', {
  state: () => ({ turns: 0, lengths: [] }),
  turn: () => new Work({ name: 'work' }),
  queries: { length: (state) => state.doc?.length ?? -1 },
});

const idleDocs = defineAgent<Doc>('idle-doc', {
  state: () => ({ turns: 0, lengths: [] }),
  turn: () => new Work({ name: 'work' }),
  idleTtlMs: 600_000,
});

describe.each(engines)('%s: large agent states', (name) => {
  const setup = useEngine(name);

  it('keeps a large member across turns, the stored state holding a reference; deleteAgent lets it go', async () => {
    const h = await setup('agent-large-state', {
      flows: [],
      agents: [docs],
      retentionMs: 60_000,
      largeValueBytes: LARGE_VALUE_BYTES,
    });
    const ref = docs.ref('k1');
    const other = docs.ref('k2'); // loads a member, then drops it
    const started = Date.now();
    await h.engine.send(ref, { op: 'load', tag: 'one' });
    await h.engine.send(other, { op: 'load', tag: 'two' });
    await h.engine.send(ref, { op: 'count' });
    await h.engine.send(other, { op: 'drop' });
    await h.engine.send(ref, { op: 'count' });
    await waitFor('3 turns', async () => (await h.engine.agent(ref))?.turns === 3);
    const elapsedMs = Date.now() - started;
    await waitFor('2 turns', async () => (await h.engine.agent(other))?.turns === 2);

    const agent = await h.engine.agent(ref);
    expect(agent?.state.doc).toBe(big('one'));
    expect(agent?.state.lengths).toEqual([SIZE, SIZE]); // turns saw the value itself
    expect(await h.engine.query(ref, 'length')).toBe(SIZE);
    const history = await h.engine.agentHistory(ref);
    expect(history[0]?.patch).toContainEqual({ op: 'add', path: '/doc', value: big('one') });
    expect((await h.engine.agent(other))?.state).toEqual({ turns: 2, lengths: [] });

    if (h.redis) {
      const keys = h.redis.partitions.ofAddress(ref);
      const redis = h.redis.connection;
      const stateBytes = await redis.hstrlen(keys.agent(ref), 'st');
      const hashBytes = Number(await redis.call('MEMORY', 'USAGE', keys.agent(ref), 'SAMPLES', '0'));
      console.log(
        `${name}: 3 turns of a ${SIZE}-byte member in ${elapsedMs} ms; agent hash ${hashBytes} B, st ${stateBytes} B`,
      );
      expect(stateBytes).toBeLessThan(200);
      expect(hashBytes).toBeLessThan(1024);
      const hash = hashOf(big('one'));
      expect(await redis.strlen(keys.value(hash))).toBe(SIZE + 2); // the JSON string, with its quotes
      expect(await redis.zscore(keys.valueRefs(hash), ref)).toBe('inf'); // claimed for the key
      expect(await redis.smembers(keys.agentValues(ref))).toEqual([hash]);
      expect((await h.stored()).filter((key) => key.includes(':value-staged:'))).toEqual([]);
      if (name === 'RedisEngine') {
        // One copy of each, however many turns, runs and steps hold it.
        expect((await h.stored()).filter((key) => /:value:[0-9a-f]{64}$/.test(key))).toHaveLength(2);
      }
    }

    expect(await h.engine.deleteAgent(ref)).toBe(true);
    expect(await h.engine.agent(ref)).toBeUndefined();
    if (h.redis) {
      const redis = h.redis.connection;
      for (const [key, tag] of [
        [ref, 'one'],
        [other, 'two'],
      ] as const) {
        const keys = h.redis.partitions.ofAddress(key);
        const hash = hashOf(big(tag));
        expect(await redis.zscore(keys.valueRefs(hash), key)).toBeNull();
        expect(await redis.exists(keys.agentValues(key))).toBe(0);
        // Held now only by the runs of the turns, which expire: so does the value (on a cluster,
        // the copy in the key's partition is gone when those runs live in others).
        const ttl = await redis.pttl(keys.value(hash));
        expect(ttl === -2 || (ttl > 0 && ttl <= 120_000), `pttl ${ttl}`).toBe(true);
      }
    }
    // The key comes back fresh.
    await h.engine.send(ref, { op: 'count' });
    await waitFor('a new turn', async () => (await h.engine.agent(ref))?.turns === 1);
    expect((await h.engine.agent(ref))?.state).toEqual({ turns: 1, lengths: [-1] });
  });

  it.runIf(name !== 'LocalEngine')(
    'an idle key lets its values expire with it, and keeps them again for a turn',
    async () => {
      const h = await setup('agent-large-state-idle', {
        flows: [],
        agents: [idleDocs],
        largeValueBytes: LARGE_VALUE_BYTES,
      });
      const ref = idleDocs.ref('k');
      const keys = h.redis!.partitions.ofAddress(ref);
      const redis = h.redis!.connection;
      const hash = hashOf(big('idle'));
      await h.engine.send(ref, { op: 'load', tag: 'idle' });
      await waitFor('the first turn', async () => (await h.engine.agent(ref))?.turns === 1);
      // Idle: the key's claim ends with its idle time.
      expect(Number(await redis.zscore(keys.valueRefs(hash), ref))).toBeGreaterThan(Date.now());
      expect(await redis.pttl(keys.agentValues(ref))).toBeGreaterThan(0);

      let during: [string | null, number] | undefined;
      duringTurn = async () => {
        during = [await redis.zscore(keys.valueRefs(hash), ref), await redis.pttl(keys.agentValues(ref))];
      };
      try {
        await h.engine.send(ref, { op: 'hook' });
        await waitFor('the second turn', async () => (await h.engine.agent(ref))?.turns === 2);
      } finally {
        duringTurn = undefined;
      }
      expect(during).toEqual(['inf', -1]); // kept for good while a turn runs
      expect((await h.engine.agent(ref))?.state.doc).toBe(big('idle'));
    },
  );
});
