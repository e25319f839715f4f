import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, Node } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

const counter = defineAgent('lost-reply-counter', {
  state: () => ({ n: 0 }),
  turn: () =>
    new (class extends Node<{ n: number }> {
      override prep(state: { n: number }): void {
        state.n += 1;
      }
    })({ name: 'add' }),
});

/** The first commitStep that ends a turn and makes the next turn's run runs, but its reply is lost. */
function loseOneTurnEndReply(): { lost(): boolean; stop(): void } {
  let lost = false;
  const proto = Redis.prototype as unknown as {
    sendCommand(command: { name: string; args: unknown[] }, stream?: object): Promise<unknown>;
    scriptsSet?: Record<string, { sha: string }>;
  };
  const original = proto.sendCommand;
  proto.sendCommand = function (this: typeof proto, command, stream) {
    const result = original.call(this, command, stream);
    if (command.name === 'evalsha' && this.scriptsSet?.commitStep?.sha === command.args[0]) {
      return result.then((reply) => {
        const turn = (reply as unknown[])[7];
        if (!lost && Array.isArray(turn) && turn.length > 1) {
          lost = true;
          throw new Error('Connection is closed.');
        }
        return reply;
      });
    }
    return result;
  };
  return { lost: () => lost, stop: () => (proto.sendCommand = original) };
}

describe('RedisEngine: a commit whose answer is lost after it made the next turn taken', () => {
  const prefix = testPrefix('agent-lost-reply');
  const agents = [counter];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], agents, prefix });
  afterAll(async () => {
    await engine.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it('still runs the next turn while the worker lives', async () => {
    const ref = counter.ref('k');
    await engine.send(ref, { i: 1 });
    await engine.send(ref, { i: 2 });
    await engine.send(ref, { i: 3 });
    const fault = loseOneTurnEndReply();
    const worker = await startWorker({ connection: redisUrl(), flows: [], agents, prefix, concurrency: 1 });
    try {
      await expect.poll(() => fault.lost(), { timeout: 10_000 }).toBe(true);
      fault.stop();
      // The next turn's run, made taken by this worker in the commit whose answer was lost, gets
      // a task (the retried commit answers stale): the key goes on while the worker lives.
      await expect.poll(async () => (await engine.agent(ref))?.turns, { timeout: 20_000 }).toBe(3);
    } finally {
      fault.stop();
      await worker.close();
    }
  }, 60_000);
});
