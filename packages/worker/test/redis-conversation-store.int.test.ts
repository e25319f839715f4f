import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_CONVERSATION_MESSAGES, type ConversationReceipt } from '@queueflow/runtime/kernel';
import { Partitions } from '../src/partitions.js';
import { RedisConversationStore } from '../src/redis-conversation-store.js';
import { withScripts } from '../src/scripts.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

/** A plain run's receipt of message `n` of conversation `c`. */
function receipt(n: number, to = 'run-1'): ConversationReceipt {
  return { to, runId: to, turn: 0, message: { id: `m${n}`, from: 'agent:a/x', at: n }, now: 1_000 + n };
}

describe('RedisConversationStore: receipts', () => {
  let redis: Redis;
  const prefix = testPrefix('conversation-receipts');
  const partitions = new Partitions(prefix, 1);
  let store: RedisConversationStore;
  beforeAll(() => {
    redis = new Redis(redisUrl());
    store = new RedisConversationStore(withScripts(redis), partitions, 60);
  });
  afterAll(async () => {
    await deletePrefix(redisUrl(), prefix);
    redis.disconnect();
  });

  it('logs a message once per receiver, a retried step receiving it again included', async () => {
    await store.received('c1', receipt(1));
    await store.received('c1', receipt(1)); // the step's retry
    await store.received('c1', receipt(1, 'run-2')); // another receiver
    const conversation = (await store.load('c1'))!;
    expect(conversation.log.map((entry) => [entry.id, entry.to])).toEqual([
      ['m1', 'run-1'],
      ['m1', 'run-2'],
    ]);
    expect(conversation.participants).toEqual(['run-1', 'run-2']);
  });

  it('keeps the pairs it checks for duplicates as the log: the last entries, capped alike', async () => {
    const cap = MAX_CONVERSATION_MESSAGES;
    for (let first = 0; first < cap + 10; first += 200)
      await Promise.all(
        Array.from({ length: Math.min(200, cap + 10 - first) }, (_, i) => store.received('c2', receipt(first + i))),
      );
    const conversation = (await store.load('c2'))!;
    expect(conversation.log).toHaveLength(cap);
    const seen = partitions.ofAddress('c2').conversationKeys('c2')[4];
    expect(await redis.zcard(seen)).toBe(cap);
    expect(await redis.ttl(seen)).toBeGreaterThan(0); // kept for the retention, as the log
    // A message trimmed from the log is no longer known: logged again, as before the set existed.
    const logged = new Set(conversation.log.map((entry) => entry.id));
    const trimmed = [...Array(cap + 10).keys()].find((n) => !logged.has(`m${n}`))!;
    await store.received('c2', receipt(cap + 5)); // still in the log: a duplicate
    expect((await store.load('c2'))!.log.at(-1)!.id).toBe(`m${cap + 9}`);
    await store.received('c2', receipt(trimmed));
    expect((await store.load('c2'))!.log.at(-1)!.id).toBe(`m${trimmed}`);
  });
});
