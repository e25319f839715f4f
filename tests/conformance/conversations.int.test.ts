/**
 * Contract: conversations (README "Conversations"). A message sent with `conversation` starts or
 * continues one; every message a turn handling it sends carries it on. `engine.conversation(id)`
 * shows its turns, participants, the messages its turns handled in order, and its turns parked
 * now. Past a limit of its budget no further turn runs: the conversation ends with
 * `CONVERSATION_BUDGET`, and the message of the refused turn goes to its agent's dead letters.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, defineFlow, Flow, Node, type JsonObject } from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

/** Two agents that answer each other for ever: a runaway loop. */
class Bounce extends Node<{ hits: number }> {
  override async prep(state: { hits: number }): Promise<void> {
    state.hits += 1;
    const other = this.agentKey === 'ping' ? 'pong' : 'ping';
    await this.send(player.ref(other), { hit: state.hits });
  }
}
const player = defineAgent('player', { state: () => ({ hits: 0 }), turn: () => new Bounce({ name: 'bounce' }) });

/** Asks the next agent of its path, or, last, waits on the mailbox `gate`; answers what came back. */
class Chain extends Node {
  override async prep(): Promise<void> {
    const message = this.message!;
    const [next, ...rest] = (message.body as { path: string[] }).path;
    const answer = next === undefined ? await this.receive('gate') : await this.ask(next, { path: rest });
    if (message.replyTo) await this.reply(message, (answer?.body ?? null) as JsonObject);
  }
}
const link = defineAgent('link', { state: () => ({}), turn: () => new Chain({ name: 'chain' }) });
/** A player that spends 30 tokens a turn (in exec, as a model call would) and hands the ball on. */
class Spend extends Node<{ hits: number }> {
  override async prep(state: { hits: number }): Promise<void> {
    state.hits += 1;
    await this.send(spender.ref(this.agentKey === 'ping' ? 'pong' : 'ping'), { hit: state.hits });
  }
  override async exec(): Promise<void> {
    await this.spend('tokens', 30);
  }
}
const spender = defineAgent('spender', { state: () => ({ hits: 0 }), turn: () => new Spend({ name: 'spend' }) });

/** A plain run that serves one ask on its mailbox, asking the echo agent on the way. */
class Serve extends Node {
  override async prep(): Promise<void> {
    const asked = await this.receive((this.params as { address: string }).address);
    const echoed = await this.ask(echo.ref('e'), { hello: true }, { timeoutMs: 30_000 });
    await this.reply(asked!, { served: echoed?.body !== undefined });
  }
}
/** Answers what it is asked. */
class Echo extends Node {
  override async prep(): Promise<void> {
    await this.reply(this.message!, this.message!.body as JsonObject);
  }
}
const echo = defineAgent('echo', { state: () => ({}), turn: () => new Echo({ name: 'echo' }) });
const desk = defineFlow('conversation-desk', () => new Flow(new Serve({ name: 'serve' })));
const agents = [player, link, spender, echo];

describe.each(engines)('%s: conversations', (name) => {
  const setup = useEngine(name);

  it('stops a runaway two-agent loop at its turn budget', async () => {
    const { engine } = await setup('conversation-budget', { flows: [], agents, autoAdvance: true, concurrency: 4 });
    const id = await engine.send(player.ref('ping'), { hit: 0 }, { conversation: { budget: { turns: 20 } } });
    await waitFor('the conversation to end', async () => (await engine.conversation(id))?.status === 'ended', {
      timeoutMs: 60_000,
    });
    await waitFor('no turn to run', async () => {
      const refs = [player.ref('ping'), player.ref('pong')];
      const infos = await Promise.all(refs.map((ref) => engine.agent(ref)));
      return infos.every((info) => info?.running === undefined);
    });
    const conversation = (await engine.conversation(id))!;
    expect(conversation).toMatchObject({
      id,
      status: 'ended',
      turns: 20,
      participants: [player.ref('ping'), player.ref('pong')],
      error: { code: 'CONVERSATION_BUDGET', message: expect.stringContaining('turns: 20') as unknown },
      budget: { turns: 20 },
    });
    const [ping, pong] = await Promise.all([engine.agent(player.ref('ping')), engine.agent(player.ref('pong'))]);
    expect(ping!.turns + pong!.turns).toBe(20);
    const refused = [...ping!.failed, ...pong!.failed];
    expect(refused).toHaveLength(1);
    expect(refused[0]!.error.code).toBe('CONVERSATION_BUDGET');
    expect(refused[0]!.message.conversation).toBe(id);
    // The messages of the turns, in order, each from the other player.
    expect(conversation.messages).toHaveLength(20);
    expect(conversation.messages[0]).toMatchObject({ id, to: player.ref('ping'), turn: 1 });
    expect(conversation.messages[0]!.from).toBeUndefined();
    for (const [i, message] of conversation.messages.slice(1).entries())
      expect(message.from, `message ${i + 1}`).toBe(conversation.messages[i]!.to);
    expect((await engine.conversations()).ids).toContain(id);
  });

  it('ends a conversation whose turns spend past its cost budget, cancelling the turn that did', async () => {
    const { engine } = await setup('conversation-cost', { flows: [], agents, autoAdvance: true });
    const [ping, pong] = [spender.ref('ping'), spender.ref('pong')];
    const id = await engine.send(ping, { hit: 0 }, { conversation: { budget: { cost: { key: 'tokens', max: 100 } } } });
    await waitFor('the conversation to end', async () => (await engine.conversation(id))?.status === 'ended', {
      timeoutMs: 60_000,
    });
    await waitFor('no turn to run', async () => {
      const infos = await Promise.all([ping, pong].map((ref) => engine.agent(ref)));
      return infos.every((info) => info?.running === undefined);
    });
    // Turns 1 to 3 spent 90; turn 4 (pong's second) went past 100: cancelled, its send never left.
    const conversation = (await engine.conversation(id))!;
    expect(conversation).toMatchObject({
      status: 'ended',
      turns: 4,
      spend: { [ping]: { tokens: 60 }, [pong]: { tokens: 60 } },
      error: {
        code: 'CONVERSATION_BUDGET',
        message: `conversation '${id}' reached its budget (cost: 100 tokens): no further turn runs`,
      },
      budget: { cost: { key: 'tokens', max: 100 } },
    });
    const [pinged, ponged] = await Promise.all([engine.agent(ping), engine.agent(pong)]);
    expect(pinged!.state).toEqual({ hits: 2 });
    expect(ponged!.state).toEqual({ hits: 1 }); // the cancelled turn's state was not kept
    await expect(
      engine.send(ping, {}, { conversation: { budget: { cost: { key: 'tokens', max: -1 } } } }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTION', message: expect.stringContaining('cost.max') as unknown });
    await expect(
      engine.send(ping, {}, { conversation: { budget: { cost: { key: 'tokens', max: Number.NaN } } } }),
    ).rejects.toMatchObject({ message: expect.stringContaining('got NaN') as unknown });
  });

  it('records a 3-agent chain under its id, with the turns parked now', async () => {
    const { engine } = await setup('conversation-chain', { flows: [], agents, autoAdvance: true });
    const [a, b, c] = ['a', 'b', 'c'].map((key) => link.ref(key)) as [string, string, string];
    const answer = engine.ask(a, { path: [b, c] }, { timeoutMs: 30_000, conversation: { id: 'support-1' } });
    await waitFor(
      'two parked asks and the gate',
      async () => (await engine.conversation('support-1'))?.waits.length === 3,
    );
    const waiting = (await engine.conversation('support-1'))!;
    expect(waiting.waits.map((wait) => wait.agent)).toEqual(expect.arrayContaining([a, b, c]));
    expect(waiting.waits.find((wait) => wait.agent === c)!.on).toBe('gate');
    await engine.send('gate', { opened: true });
    expect((await answer)?.body).toEqual({ opened: true });
    await waitFor('the turns to end', async () => (await engine.conversation('support-1'))?.waits.length === 0);
    const conversation = (await engine.conversation('support-1'))!;
    expect(conversation).toMatchObject({ status: 'running', turns: 3, participants: [a, b, c], waits: [] });
    // The asks the turns handled, then the answers their turns received, in causal order.
    expect(conversation.messages.map((message) => [message.from ?? null, message.to])).toEqual([
      [null, a],
      [a, b],
      [b, c],
      [c, b],
      [b, a],
    ]);
  });

  it('records a plain run that answers an ask in the conversation, and its answer', async () => {
    const { engine } = await setup('conversation-run', { flows: [desk], agents, autoAdvance: true });
    const service = await engine.start(desk, {}, { params: { address: `desk-${name}` } });
    const a = link.ref('asker');
    const answer = await engine.ask(
      a,
      { path: [`desk-${name}`] },
      { timeoutMs: 30_000, conversation: { id: 'desk-1' } },
    );
    expect(answer?.body).toEqual({ served: true });
    await waitFor('the turn to end', async () => !(await engine.agent(a))?.running);
    expect((await service.result()).status).toBe('completed');
    const conversation = (await engine.conversation('desk-1'))!;
    const e = echo.ref('e');
    expect(conversation.participants).toEqual([a, service.id, e]);
    expect(conversation.turns).toBe(2); // a plain run takes no turn
    // In causal order: the run's receipt is recorded when it parks on its own ask, before that ask.
    expect(conversation.messages.map((message) => [message.from ?? null, message.to, message.turn])).toEqual([
      [null, a, 1],
      [a, service.id, 0],
      [service.id, e, 1],
      [e, service.id, 0],
      [service.id, a, 1],
    ]);
  });

  it("records a person's answer to a turn's question in the turn's conversation", async () => {
    const { engine } = await setup('conversation-person', { flows: [], agents, autoAdvance: true });
    const a = link.ref('p-asker');
    const human = `human-${name}`;
    const answer = engine.ask(a, { path: [human] }, { timeoutMs: 30_000, conversation: { id: 'person-1' } });
    let question: { id: string } | undefined;
    await waitFor('the question to the person', async () => {
      question = (await engine.mailboxes()).find((box) => box.address === human)?.messages[0];
      return question !== undefined;
    });
    await engine.answer(human, question!.id, { ok: true });
    expect((await answer)?.body).toEqual({ ok: true });
    await waitFor('the turn to end', async () => !(await engine.agent(a))?.running);
    const messages = (await engine.conversation('person-1'))!.messages;
    expect(messages.map((message) => [message.from ?? null, message.to])).toEqual([
      [null, a],
      [null, a], // the answer, from outside any run
    ]);
    expect(messages[1]!.id).not.toBe(messages[0]!.id);
  });

  it('refuses a bad conversation id or budget, sending nothing', async () => {
    const { engine } = await setup('conversation-bad', { flows: [], agents, autoAdvance: true });
    await expect(engine.send(link.ref('x'), {}, { conversation: { id: 'has space' } })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
    });
    await expect(engine.send(link.ref('x'), {}, { conversation: { budget: { turns: 1.5 } } })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining('turns') as unknown,
    });
    await expect(
      engine.send(link.ref('x'), {}, { conversation: { budget: { tokens: 5 } as never } }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTION', message: expect.stringContaining('tokens') as unknown });
    expect(await engine.agent(link.ref('x'))).toBeUndefined();
    expect(await engine.conversation('nobody')).toBeUndefined();
  });
});
