/**
 * Keyed agents across deploys and idle time (README "Agents"): a stored state of an older
 * `version` is migrated at the key's next turn after workers of the new version start, and a key
 * idle for `idleTtlMs` is gone (state, dead letters, index entry) while its next message starts a
 * fresh one. On RedisEngine, where both outlive the processes.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, Node, type JsonObject } from '@queueflow/runtime';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';

class Add extends Node<JsonObject> {
  override prep(shared: JsonObject): void {
    const body = this.message!.body as { add: number };
    shared.total = Number(shared.total ?? 0) + body.add;
  }
}

/** Version 1 kept `sum`; version 2 keeps `total` and `history`. */
const v1 = defineAgent('ledger', {
  state: () => ({ sum: 0 }),
  turn: () =>
    new (class extends Node<JsonObject> {
      override prep(shared: JsonObject): void {
        shared.sum = Number(shared.sum) + (this.message!.body as { add: number }).add;
      }
    })({ name: 'add' }),
});
const v2 = defineAgent('ledger', {
  state: () => ({ total: 0, migratedFrom: 0 }),
  turn: () => new Add({ name: 'add' }),
  version: 2,
  migrate: (state, fromVersion) => ({ total: Number(state.sum), migratedFrom: fromVersion }),
});

const shortLived = defineAgent('short', {
  state: () => ({ total: 0 }),
  turn: () => new Add({ name: 'add' }),
  idleTtlMs: 400,
});

describe('RedisEngine: agents across deploys and idle time', () => {
  const setup = useRedisHarness();

  it('migrates a state of an older version at the next turn after a deploy', async () => {
    const redis = await setup('agent-migrate', { flows: [], workers: 0 });
    const old = await redis.worker({ agents: [v1] });
    const before = redis.client({ agents: [v1] });
    const ref = v1.ref('acct');
    await before.send(ref, { add: 5 });
    await waitFor('the first turn', async () => (await before.agent(ref))?.turns === 1);
    expect((await before.agent(ref))!.state).toEqual({ sum: 5 });
    await old.close();

    await redis.worker({ agents: [v2] });
    const after = redis.client({ agents: [v2] });
    await after.send(ref, { add: 2 });
    await waitFor('the second turn', async () => (await after.agent(ref))?.turns === 2);
    expect((await after.agent(ref))!.state).toEqual({ total: 7, migratedFrom: 1 });
  });

  it('deletes a key idle for idleTtlMs; its next message starts a fresh key', async () => {
    const redis = await setup('agent-idle', { flows: [], workers: 0 });
    await redis.worker({ agents: [shortLived] });
    const engine = redis.client({ agents: [shortLived] });
    const ref = shortLived.ref('k');
    await engine.send(ref, { add: 3 });
    await waitFor('the turn', async () => (await engine.agent(ref))?.turns === 1);
    await waitFor('the key to expire', async () => (await engine.agent(ref)) === undefined, { timeoutMs: 5000 });
    expect((await engine.agents({ type: 'short' })).agents).toEqual([]);
    await engine.send(ref, { add: 1 });
    await waitFor('a fresh turn', async () => (await engine.agent(ref))?.turns === 1);
    expect((await engine.agent(ref))!.state).toEqual({ total: 1 });
  });
});
