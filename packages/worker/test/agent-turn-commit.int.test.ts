import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { defineAgent, Node, type Message } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

class Add extends Node<{ n: number; seen: number[] }> {
  override prep(state: { n: number; seen: number[] }): void {
    state.n += 1;
    state.seen.push((this.message!.body as { i: number }).i);
  }
}
const counter = defineAgent('turn-commit-counter', {
  state: () => ({ n: 0, seen: [] as number[] }),
  turn: () => new Add({ name: 'add' }),
  subscribe: { everyone: (body) => (body as { keys: string[] }).keys },
});

/** Asks the answerer once per message: `{ answerer, n }`, keeping the answers. */
class AskOnce extends Node<{ answers: number[] }> {
  override prep(): Promise<Message | undefined> {
    const { answerer, n } = this.message!.body as { answerer: string; n: number };
    return this.ask(answerer, { n }, { timeoutMs: 20_000 });
  }
  override post(state: { answers: number[] }, answer: Message | undefined): void {
    state.answers.push((answer!.body as { n: number }).n);
  }
}
const asker = defineAgent('turn-commit-asker', {
  state: () => ({ answers: [] as number[] }),
  turn: () => new AskOnce({ name: 'ask' }),
});
const answerer = defineAgent('turn-commit-answerer', {
  state: () => ({}),
  turn: () =>
    new (class extends Node {
      override async post(): Promise<void> {
        await this.reply(this.message!, this.message!.body);
      }
    })({ name: 'answer' }),
});

/** How many times this process sends each of the run store's and agent store's scripts, by name. */
function countScripts(): { counts: Map<string, number>; stop(): void } {
  const counts = new Map<string, number>();
  const proto = Redis.prototype as unknown as {
    sendCommand(command: { name: string; args: unknown[] }, stream?: object): unknown;
    scriptsSet?: Record<string, { sha: string }>;
  };
  const original = proto.sendCommand;
  proto.sendCommand = function (this: typeof proto, command, stream) {
    if (command.name === 'evalsha') {
      const name = Object.entries(this.scriptsSet ?? {}).find(([, script]) => script.sha === command.args[0])?.[0];
      if (name) counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    return original.call(this, command, stream);
  };
  return { counts, stop: () => (proto.sendCommand = original) };
}

describe('RedisEngine: the turns of one key', () => {
  const prefix = testPrefix('turn-commit');
  const agents = [counter, asker, answerer];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], agents, prefix });
  afterAll(async () => {
    await engine.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it('end, commit and start the next in one script each, in FIFO order', async () => {
    const ref = counter.ref('hot');
    const turns = 30;
    for (let i = 0; i < turns; i++) await engine.send(ref, { i });
    const watch = countScripts();
    const worker = await startWorker({ connection: redisUrl(), flows: [], agents, prefix, concurrency: 1 });
    try {
      await expect.poll(async () => (await engine.agent(ref))?.turns, { timeout: 20_000 }).toBe(turns);
    } finally {
      await worker.close();
      watch.stop();
    }
    const agent = await engine.agent(ref);
    expect(agent?.state).toEqual({ n: turns, seen: Array.from({ length: turns }, (_, i) => i) });
    // The first turn was started by its send; each turn's end committed with its run's last step
    // and made the next turn's run there: no end-turn and no create-run script of their own.
    expect(watch.counts.get('commitStep')).toBe(turns);
    expect(watch.counts.get('endTurn') ?? 0).toBe(0);
    expect(watch.counts.get('createRun') ?? 0).toBe(0);
    // Each turn is still a run of its own, in the key's history.
    const history = await engine.agentHistory(ref);
    expect(history.map((turn) => turn.turn)).toEqual(Array.from({ length: turns }, (_, i) => i + 1));
  });

  it('start the turns of idle keys with their runs in the send that reaches them', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => `idle-${i}`);
    const watch = countScripts();
    try {
      await engine.publish('everyone', { keys, i: 7 });
    } finally {
      watch.stop();
    }
    expect(watch.counts.get('sendToAgent')).toBe(1);
    expect(watch.counts.get('createRun') ?? 0).toBe(0);
    // No worker runs: each turn's run waits queued, its first step due.
    for (const key of keys) {
      const agent = await engine.agent(counter.ref(key));
      const run = await engine.get(agent!.running!);
      expect(run?.status).toBe('queued');
    }
    const worker = await startWorker({ connection: redisUrl(), flows: [], agents, prefix, concurrency: 4 });
    try {
      for (const key of keys)
        await expect
          .poll(async () => (await engine.agent(counter.ref(key)))?.state, { timeout: 20_000 })
          .toEqual({ n: 1, seen: [7] });
    } finally {
      await worker.close();
    }
  });

  it("start the turn of an idle agent a turn asks in the ask's own park", async () => {
    const ref = asker.ref('a');
    const asks = 10;
    const watch = countScripts();
    const worker = await startWorker({ connection: redisUrl(), flows: [], agents, prefix, concurrency: 2 });
    try {
      for (let n = 0; n < asks; n++) await engine.send(ref, { answerer: answerer.ref('b'), n });
      await expect.poll(async () => (await engine.agent(ref))?.turns, { timeout: 20_000 }).toBe(asks);
    } finally {
      await worker.close();
      watch.stop();
    }
    expect((await engine.agent(ref))?.state).toEqual({ answers: Array.from({ length: asks }, (_, n) => n) });
    // Each question reached an idle answerer: its park started the answerer's turn and made its
    // run; the asker's turns started with their sends or with the end of the turn before.
    expect(watch.counts.get('activateAgent') ?? 0).toBe(0);
    expect(watch.counts.get('createRun') ?? 0).toBe(0);
    expect(watch.counts.get('endTurn') ?? 0).toBe(0);
  });
});
