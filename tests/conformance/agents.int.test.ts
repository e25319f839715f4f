/**
 * Contract: keyed agents (README "Agents"; DESIGN: agents are durable virtual actors whose turns
 * are runs). A key is activated by its first message, keeps its state across turns, handles one
 * message at a time in FIFO order, and answers asks from outside and from other agents' turns.
 * A turn that fails leaves the state as it was and its message in the dead letters, and the next
 * message is handled. Queries read the last committed state without a turn.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, Node, type AgentDefinition, type JsonObject } from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

interface Counter extends JsonObject {
  count: number;
  seen: string[];
}

/** Turns of one key running now, by key: a second one at once is an overlap. */
const runningTurns = new Map<string, number>();
let overlaps = 0;

/** Adds the message's `add` to the count; `fail: true` throws (a poison message). */
class Count extends Node<Counter> {
  override async prep(shared: Counter): Promise<void> {
    const key = this.runContext!.runId.replace(/t\d+$/, ''); // one key's turns: `<incarnation>t<n>`
    const now = (runningTurns.get(key) ?? 0) + 1;
    runningTurns.set(key, now);
    if (now > 1) overlaps++;
    try {
      const body = this.message!.body as { add?: number; fail?: boolean; tag?: string; slow?: boolean };
      if (body.slow) await new Promise((resolve) => setTimeout(resolve, 20));
      if (body.fail) throw new Error(`poison message ${this.message!.id}`);
      shared.count += body.add ?? 0;
      if (body.tag !== undefined) shared.seen.push(body.tag);
      if (this.message!.replyTo) await this.reply(this.message!, { count: shared.count });
    } finally {
      runningTurns.set(key, (runningTurns.get(key) ?? 1) - 1);
    }
  }
}

const counter = defineAgent<Counter>('counter', {
  state: () => ({ count: 0, seen: [] }),
  turn: () => new Count({ name: 'count' }),
  queries: { count: (state) => state.count, plus: (state, arg) => state.count + Number(arg) },
});

/** Asks the counter `counter:<key>` for its count from inside its own turn. */
class AskCounter extends Node<{ answers: number[] }> {
  override async prep(shared: { answers: number[] }): Promise<void> {
    const body = this.message!.body as { key: string };
    const answer = await this.ask(counter.ref(body.key), { add: 1 }, { timeoutMs: 20_000 });
    shared.answers.push((answer?.body as { count: number }).count);
    if (this.message!.replyTo) await this.reply(this.message!, { answers: shared.answers });
  }
}
const asker = defineAgent<{ answers: number[] }>('asker', {
  state: () => ({ answers: [] }),
  turn: () => new AskCounter({ name: 'ask-counter' }),
});

/** Holds its turn until cancelled when the message says `hold`; else counts it. */
class Hold extends Node<{ handled: number }> {
  override prep(): { hold?: boolean } {
    return this.message!.body as { hold?: boolean };
  }
  override async exec(body: { hold?: boolean }): Promise<void> {
    if (body.hold) await new Promise((resolve) => this.signal?.addEventListener('abort', resolve));
  }
  override post(shared: { handled: number }): undefined {
    shared.handled += 1;
    return undefined;
  }
}
const holder = defineAgent<{ handled: number }>('holder', {
  state: () => ({ handled: 0 }),
  turn: () => new Hold({ name: 'hold' }),
});

const agents: AgentDefinition<any>[] = [counter, asker, holder];

describe.each(engines)('%s: keyed agents', (name) => {
  const setup = useEngine(name);

  it('activates a key by its first message, keeps its state across turns, handles messages in FIFO order', async () => {
    const { engine } = await setup('agents-fifo', { flows: [], agents, autoAdvance: true });
    const ref = counter.ref('alice');
    expect(await engine.agent(ref)).toBeUndefined();
    for (let i = 1; i <= 5; i++) await engine.send(ref, { add: i, tag: `m${i}` });
    await waitFor('5 turns', async () => (await engine.agent(ref))?.turns === 5);
    const info = await engine.agent(ref);
    expect(info).toMatchObject({ type: 'counter', key: 'alice', turns: 5, inbox: 0, failed: [] });
    expect(info!.state).toEqual({ count: 15, seen: ['m1', 'm2', 'm3', 'm4', 'm5'] });
    expect(info!.running).toBeUndefined();
    // A later activation starts from the committed state.
    await engine.send(ref, { add: 10 });
    await waitFor('6 turns', async () => (await engine.agent(ref))?.turns === 6);
    expect((await engine.agent(ref))!.state.count).toBe(25);
    expect(await engine.query(ref, 'count')).toBe(25);
    expect(await engine.query(ref, 'plus', 5)).toBe(30);
    expect(await engine.query(counter.ref('nobody'), 'count')).toBe(0);
    await expect(engine.query(ref, 'nope')).rejects.toMatchObject({ code: 'INVALID_OPTION' });
  });

  it('runs one turn at a time per key, keys in parallel', async () => {
    const { engine } = await setup('agents-overlap', { flows: [], agents, autoAdvance: true, concurrency: 8 });
    overlaps = 0;
    const keys = ['a', 'b', 'c'];
    await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: 8 }, (_, i) => engine.send(counter.ref(key), { add: 1, slow: true, tag: `${i}` })),
      ),
    );
    await waitFor(
      'every key to take 8 turns',
      async () => {
        const infos = await Promise.all(keys.map((key) => engine.agent(counter.ref(key))));
        return infos.every((info) => info?.turns === 8);
      },
      { timeoutMs: 30_000 },
    );
    expect(overlaps).toBe(0);
    for (const key of keys) expect((await engine.agent(counter.ref(key)))!.state.count).toBe(8);
    const page = await engine.agents({ type: 'counter', limit: 2 });
    expect(page.agents.map((agent) => agent.key)).toEqual(['a', 'b']);
    const rest = await engine.agents({ type: 'counter', cursor: page.cursor! });
    expect(rest.agents.map((agent) => agent.ref)).toEqual([counter.ref('c')]);
  });

  it("answers an ask from outside, and one from another agent's turn", async () => {
    const { engine } = await setup('agents-ask', { flows: [], agents, autoAdvance: true });
    const answer = await engine.ask(counter.ref('bob'), { add: 3 }, { timeoutMs: 20_000 });
    expect(answer?.body).toEqual({ count: 3 });
    const chained = await engine.ask(asker.ref('q'), { key: 'bob' }, { timeoutMs: 20_000 });
    expect(chained?.body).toEqual({ answers: [4] });
    expect((await engine.agent(counter.ref('bob')))!.turns).toBe(2);
    expect(await engine.ask(counter.ref('bob'), { fail: true }, { timeoutMs: 300 })).toBeUndefined();
  });

  it('moves a poison message to the dead letters, keeps the state, handles the next; redeliver runs it again', async () => {
    const { engine } = await setup('agents-poison', { flows: [], agents, autoAdvance: true });
    const ref = counter.ref('poisoned');
    await engine.send(ref, { add: 1 });
    const poison = await engine.send(ref, { fail: true });
    await engine.send(ref, { add: 2 });
    await waitFor('2 turns and a dead letter', async () => {
      const info = await engine.agent(ref);
      return info?.turns === 2 && info.failed.length === 1;
    });
    const info = (await engine.agent(ref))!;
    expect(info.state.count).toBe(3);
    expect(info.failed[0]).toMatchObject({ message: { id: poison, body: { fail: true } } });
    expect(info.failed[0]!.error.message).toContain('poison message');
    const history = await engine.agentHistory(ref);
    expect(history.map((turn) => turn.status)).toEqual(['completed', 'failed', 'completed']);
    expect(history[0]!.patch).toEqual([{ op: 'replace', path: '/count', value: 1 }]);
    expect(history[1]!.message?.id).toBe(poison);
    const failedRun = await engine.get(history[1]!.runId);
    expect(failedRun?.status).toBe('failed');

    await expect(engine.redeliver(ref, 'm.nope')).rejects.toMatchObject({ code: 'MESSAGE_NOT_FOUND' });
    await engine.redeliver(ref, poison);
    await waitFor('the redelivered message to fail again', async () => {
      const again = await engine.agent(ref);
      return again?.failed.length === 1 && (await engine.agentHistory(ref)).length === 4;
    });
    expect(await engine.deleteAgent(ref)).toBe(true);
    expect(await engine.agent(ref)).toBeUndefined();
    expect(await engine.deleteAgent(ref)).toBe(false);
  });

  it('cancels a running turn: its message goes to the dead letters, the next one is handled', async () => {
    const { engine } = await setup('agents-cancel', { flows: [], agents, autoAdvance: true });
    const ref = holder.ref('h');
    const held = await engine.send(ref, { hold: true });
    await engine.send(ref, {});
    await waitFor('the held turn to run', async () => (await engine.agent(ref))?.running !== undefined);
    const runId = (await engine.agent(ref))!.running!;
    await waitFor('the turn run to start', async () => (await engine.get(runId))?.status === 'running');
    expect((await engine.get(runId))!.agent).toEqual({ ref, turn: 1, messageId: held });
    await engine.cancel(runId);
    await waitFor('the next message to be handled', async () => (await engine.agent(ref))?.turns === 1, {
      timeoutMs: 20_000,
    });
    const info = (await engine.agent(ref))!;
    expect(info.state).toEqual({ handled: 1 });
    expect(info.failed).toHaveLength(1);
    expect(info.failed[0]).toMatchObject({ message: { id: held }, runId, error: { code: 'RUN_CANCELLED' } });
  });

  it('refuses bad refs and receives on an agent inbox', async () => {
    const { engine } = await setup('agents-input', { flows: [], agents, autoAdvance: true });
    await expect(engine.agent('counter/alice')).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    expect(() => counter.ref('has space')).toThrow(/without whitespace/);
    expect(() => defineAgent('bad type', { state: () => ({}), turn: () => new Count() })).toThrow(/type/);
    expect(() => defineAgent('t', { state: () => ({}), turn: () => new Count(), capacty: 3 } as never)).toThrow(
      /unknown option 'capacty'/,
    );
  });
});
