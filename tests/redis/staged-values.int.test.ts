/**
 * A newcomer's probe of staged value texts (RedisRunStore.stageValues, stagedValues/claimValues
 * in run-lifecycle.lua) at the store: a transition that does not apply (a stale commit, a start
 * whose idempotency key is held) claims nothing, and should leave none of the texts it staged.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { ValueClaim } from '@queueflow/runtime/kernel';
import { checkpoint, target, useStore } from '../store-conformance/store-harness.js';
import { redisUrl } from '../support/test-redis.js';

const claimOf = (texts: Record<string, string>): ValueClaim => ({ refs: Object.keys(texts), texts });

async function stagedOf(hash: string): Promise<string[]> {
  const redis = new Redis(redisUrl());
  try {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `*:value-staged:${hash}:*`, 'COUNT', 1000);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
    return found;
  } finally {
    redis.disconnect();
  }
}

describe('RedisRunStore: staged texts of transitions that do not apply', () => {
  const open = useStore('RedisRunStore');

  it('a stale commit leaves no staged text', async () => {
    const h = await open();
    const run = await h.started();
    const fields = { checkpoint: checkpoint({ n: 2 }), target: target('next'), now: h.now() };
    expect((await h.store.commit(run, 'next', fields)).result).toBe('committed');
    const hash = randomBytes(32).toString('hex');
    const text = JSON.stringify('x'.repeat(10_000));
    const reply = await h.store.commit(run, 'next', { ...fields, values: claimOf({ [hash]: text }) });
    expect(reply.result).toBe('stale');
    expect(await h.store.values([hash])).toEqual([undefined]);
    expect(await stagedOf(hash)).toEqual([]);
  });

  it('a start refused by its held idempotency key leaves no staged text', async () => {
    const h = await open();
    await h.created({ idempotencyKey: 'same' });
    const hash = randomBytes(32).toString('hex');
    const reply = await h.store.create(
      h.newRun({ idempotencyKey: 'same', values: claimOf({ [hash]: JSON.stringify('y'.repeat(10_000)) }) }),
    );
    expect(reply.created).toBe(false);
    expect(await h.store.values([hash])).toEqual([undefined]);
    expect(await stagedOf(hash)).toEqual([]);
  });
});
