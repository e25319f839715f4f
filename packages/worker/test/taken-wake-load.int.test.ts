import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Message } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

interface Game {
  n: number;
  limit: number;
}

/** Asks the ponger `limit` times, each answer checked. */
class Ping extends Node<Game, { address: string }> {
  override prep(shared: Game): Promise<Message | undefined> {
    return this.ask(this.params.address, { n: shared.n });
  }
  override post(shared: Game, answer: Message): string {
    if ((answer.body as { n: number }).n !== shared.n) throw new Error(`answer ${JSON.stringify(answer.body)}`);
    shared.n += 1;
    return shared.n < shared.limit ? 'again' : 'done';
  }
}

/** Answers `limit` questions at its address. */
class Pong extends Node<Game, { address: string }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override async post(shared: Game, question: Message): Promise<string> {
    await this.reply(question, question.body);
    shared.n += 1;
    return shared.n < shared.limit ? 'again' : 'done';
  }
}

function looping(node: Node<Game, { address: string }>): Flow {
  node.on('again', node);
  node.on('done', new Node({ name: `${node.name}-done` }));
  return new Flow(node);
}
const pinger = defineFlow('taken-pinger', () => looping(new Ping({ name: 'ping' })));
const ponger = defineFlow('taken-ponger', () => looping(new Pong({ name: 'pong' })));

/** How many load-run scripts this process sends. */
function countLoads(): { count(): number; stop(): void } {
  let loads = 0;
  const proto = Redis.prototype as unknown as {
    sendCommand(command: { name: string; args: unknown[] }, stream?: object): unknown;
    scriptsSet?: Record<string, { sha: string }>;
  };
  const original = proto.sendCommand;
  proto.sendCommand = function (this: typeof proto, command, stream) {
    if (command.name === 'evalsha' && this.scriptsSet?.loadRun?.sha === command.args[0]) loads++;
    return original.call(this, command, stream);
  };
  return { count: () => loads, stop: () => (proto.sendCommand = original) };
}

describe('RedisEngine: a parked run woken by a step of this worker', () => {
  const prefix = testPrefix('taken-wake');
  const options = { connection: redisUrl(), flows: [pinger, ponger], prefix };
  const engine = new RedisEngine(options);
  afterAll(async () => {
    await engine.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it('runs its woken step from the run the waking transition read, with its message', async () => {
    const exchanges = 40;
    const worker = await startWorker({ ...options, concurrency: 4 });
    const loads = countLoads();
    try {
      const params = { address: `taken-wake.${prefix}` };
      const pong = await engine.start(ponger, { n: 0, limit: exchanges }, { params });
      const ping = await engine.start(pinger, { n: 0, limit: exchanges }, { params });
      const [a, b] = await Promise.all([ping.result(), pong.result()]);
      expect([a.status, b.status]).toEqual(['completed', 'completed']);
      expect([a.shared, b.shared]).toEqual([
        { n: exchanges, limit: exchanges },
        { n: exchanges, limit: exchanges },
      ]);
    } finally {
      loads.stop();
      await worker.close();
    }
    // Each exchange wakes a parked run in a transition of the other's step, which takes the wake
    // and reads the run for it: no load-run per wake (a few for the runs' first steps and the
    // chain's hand-backs to the scheduler; one per wake would be 40 or more).
    expect(loads.count()).toBeLessThan(exchanges / 4);
  });
});
