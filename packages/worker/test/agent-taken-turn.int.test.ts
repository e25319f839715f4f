import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, Node } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

const b = defineAgent('taken-turn-b', {
  state: () => ({ n: 0 }),
  turn: () =>
    new (class extends Node<{ n: number }> {
      override prep(state: { n: number }): void {
        state.n += 1;
      }
    })({ name: 'b' }),
});
const a = defineAgent('taken-turn-a', {
  state: () => ({ n: 0 }),
  turn: () =>
    new (class extends Node<{ n: number }> {
      override async prep(state: { n: number }): Promise<void> {
        state.n += 1;
        await this.send(b.ref(`b${state.n}`), { from: 'a' });
      }
    })({ name: 'a' }),
});

describe('RedisEngine: turns a chain may take', () => {
  const prefix = testPrefix('agent-taken-turn');
  const agents = [a, b];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], agents, prefix });
  const redis = new Redis(redisUrl());
  afterAll(async () => {
    await engine.close();
    redis.disconnect();
    await deletePrefix(redisUrl(), prefix);
  });

  it('leaves no run in the worker taken set once every turn has run', async () => {
    const ref = a.ref('x');
    await engine.send(ref, { i: 1 });
    // The key's next message is in a conversation: its turn's run is not made by the script.
    await engine.send(ref, { i: 2 }, { conversation: {} });
    const worker = await startWorker({ connection: redisUrl(), flows: [], agents, prefix, concurrency: 1 });
    try {
      await expect.poll(async () => (await engine.agent(ref))?.turns, { timeout: 20_000 }).toBe(2);
      await expect.poll(async () => (await engine.agent(b.ref('b1')))?.turns, { timeout: 20_000 }).toBe(1);
      await expect.poll(async () => (await engine.agent(b.ref('b2')))?.turns, { timeout: 20_000 }).toBe(1);
      // Each taken task leaves the worker's taken set once run (released without waiting): none
      // stays behind, as one would for a turn made taken that the chain did not take.
      const taken = async (): Promise<string[]> => {
        const keys = await redis.keys(`${prefix}:workers:taken:*`);
        return (await Promise.all(keys.map((key) => redis.smembers(key)))).flat();
      };
      await expect.poll(taken, { timeout: 5_000 }).toEqual([]);
    } finally {
      await worker.close();
    }
  });
});
