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

/** The agents each sendToAgent script this process sends takes (1 settings key + 7 per agent). */
function watchSendScripts(): { agents: number[]; stop(): void } {
  const agents: number[] = [];
  const proto = Redis.prototype as unknown as {
    sendCommand(command: { name: string; args: unknown[] }, stream?: object): unknown;
    scriptsSet?: Record<string, { sha: string }>;
  };
  const original = proto.sendCommand;
  proto.sendCommand = function (this: typeof proto, command, stream) {
    const sha = String(command.args[0]);
    if (command.name === 'evalsha' && this.scriptsSet?.sendToAgent?.sha === sha)
      agents.push((Number(command.args[1]) - 1) / 7);
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
});
