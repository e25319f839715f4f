import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, Node } from '@queueflow/runtime';
import { AGENT_SEND_WINDOW } from '@queueflow/runtime/kernel';
import { RedisEngine } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

const KEYS = 10_000;
const keys = Array.from({ length: KEYS }, (_, i) => `k${i}`);
const listener = defineAgent('window-listener', {
  state: () => ({}),
  turn: () => new Node({ name: 'noop' }),
  subscribe: { everyone: () => keys },
});

/**
 * The agents each sendToAgent script this process sends takes (1 settings key + 7 per agent).
 * With `refuse`, the script of that number (1-based) is refused with an error, not sent.
 */
function watchSendScripts(refuse?: number): { agents: number[]; stop(): void } {
  const agents: number[] = [];
  const proto = Redis.prototype as unknown as {
    sendCommand(
      command: { name: string; args: unknown[]; reject(error: Error): void; promise: Promise<unknown> },
      stream?: object,
    ): unknown;
    scriptsSet?: Record<string, { sha: string }>;
  };
  const original = proto.sendCommand;
  proto.sendCommand = function (this: typeof proto, command, stream) {
    const sha = String(command.args[0]);
    if (command.name === 'evalsha' && this.scriptsSet?.sendToAgent?.sha === sha) {
      agents.push((Number(command.args[1]) - 1) / 7);
      if (agents.length === refuse) {
        command.reject(new Error(`send script ${refuse} refused`));
        return command.promise;
      }
    }
    return original.call(this, command, stream);
  };
  return { agents, stop: () => (proto.sendCommand = original) };
}

describe('RedisEngine: a publish to many keys', () => {
  const prefix = testPrefix('send-window');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], agents: [listener], prefix });
  afterAll(async () => {
    await engine.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it('writes 10,000 inboxes in windows, each key once per publish', async () => {
    const watch = watchSendScripts();
    try {
      const first = await engine.publish('everyone', { n: 1 });
      const second = await engine.publish('everyone', { n: 2 });
      expect(first.delivered).toHaveLength(KEYS);
      expect(second.delivered).toHaveLength(KEYS);
      // Windowed: no script takes more agents than a window (whose size keeps it under 50 ms; a
      // timing here would measure this machine's load, not the script).
      expect(Math.max(...watch.agents)).toBe(AGENT_SEND_WINDOW);
      expect(watch.agents.reduce((sum, n) => sum + n, 0)).toBe(2 * KEYS);
      // No worker runs here: each key's first turn took the first message, the second waits.
      for (const key of ['k0', `k${AGENT_SEND_WINDOW}`, `k${KEYS - 1}`]) {
        const agent = await engine.agent(listener.ref(key));
        expect(agent?.running).toBeDefined();
        expect(agent?.inbox).toBe(2);
      }
    } finally {
      watch.stop();
    }
  });

  it('stops at a window that fails: no window starts after it, and the error comes once the others settled', async () => {
    const last = listener.ref(`k${KEYS - 1}`);
    const before = (await engine.agent(last))!.inbox;
    const watch = watchSendScripts(3);
    try {
      await expect(engine.publish('everyone', { n: 3 })).rejects.toThrow('send script 3 refused');
      // The windows in flight when the third failed, and none after (79 in all).
      const tried = watch.agents.length;
      expect(tried).toBeLessThan(10);
      // A publish that goes through: any window of the failed one still going would land meanwhile.
      const next = await engine.publish('everyone', { n: 4 });
      expect(next.delivered).toHaveLength(KEYS);
      expect(watch.agents.length).toBe(tried + Math.ceil(KEYS / AGENT_SEND_WINDOW));
      expect((await engine.agent(last))!.inbox).toBe(before + 1);
    } finally {
      watch.stop();
    }
  });
});
