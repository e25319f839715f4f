/**
 * Contract: topics and handoffs between keyed agents (README "Agents"). A body published on a
 * topic reaches, for each agent type that subscribes to it, the keys its mapping names, with one
 * message id; a publish from a step leaves with the step's commit. A `transfer` handoff ends the
 * turn and hands its message on in the same commit, sender and `replyTo` kept, so the agent that
 * takes over answers the original asker; a `delegate` handoff waits for the target's answer.
 */
import { describe, expect, it } from 'vitest';
import {
  defineAgent,
  defineFlow,
  Flow,
  Node,
  type AgentDefinition,
  type JsonObject,
  type Message,
} from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

interface Log extends JsonObject {
  got: { id: string; topic: string | null; body: JsonObject }[];
}

/** Records each message it handles. */
class Record extends Node<Log> {
  override prep(shared: Log): undefined {
    const message = this.message!;
    shared.got.push({ id: message.id, topic: message.topic ?? null, body: message.body as JsonObject });
    return undefined;
  }
}

/** A thread agent keyed by the body's `thread`, a sender agent keyed by each of its `to`. */
const thread = defineAgent<Log>('topic-thread', {
  state: () => ({ got: [] }),
  turn: () => new Record({ name: 'record' }),
  subscribe: { 'mail.classified': (body) => (body as { thread?: string }).thread },
});
const sender = defineAgent<Log>('topic-sender', {
  state: () => ({ got: [] }),
  turn: () => new Record({ name: 'record' }),
  subscribe: {
    'mail.classified': (body) => (body as { to: string[] }).to,
    'mail.other': () => 'x',
  },
});
/** Holds its turn until cancelled: the message stays in the inbox, which stays full. */
class Hold extends Node {
  override async exec(): Promise<void> {
    await new Promise((resolve) => this.signal?.addEventListener('abort', resolve));
  }
}
const full = defineAgent<Log>('topic-full', {
  state: () => ({ got: [] }),
  turn: () => new Hold({ name: 'hold' }),
  capacity: 1,
  onFull: 'reject',
  subscribe: { 'mail.full': () => 'only' },
});

/** A plain run's step that publishes twice. */
class Publish extends Node {
  override async prep(): Promise<void> {
    await this.publish('mail.classified', { thread: 'from-run', to: ['r1', 'r2'], n: 1 });
    await this.publish('mail.classified', { thread: 'from-run', to: [], n: 2 });
  }
}
const publisher = defineFlow('topic-publisher', () => new Flow(new Publish({ name: 'publish' })));

interface Desk extends JsonObject {
  handled: string[];
}

/** The front desk hands billing questions to `billing` (transfer) and asks `billing` for others (delegate). */
class Front extends Node<Desk> {
  override async prep(shared: Desk): Promise<void> {
    const body = this.message!.body as { q: string; mode: 'transfer' | 'delegate' };
    shared.handled.push(body.q);
    if (body.mode === 'transfer') {
      await this.handoff(billing.ref('main'), { q: body.q, note: 'from the front desk' });
      return;
    }
    const answer = await this.handoff(billing.ref('main'), { q: body.q }, { mode: 'delegate', timeoutMs: 20_000 });
    await this.reply(this.message!, { via: 'front', billing: answer?.body ?? null });
  }
  override post(): string {
    return 'after'; // a transfer ends the turn: `after` must not run
  }
}
class After extends Node<Desk> {
  override prep(shared: Desk): undefined {
    shared.handled.push('after');
    return undefined;
  }
}
const front = defineAgent<Desk>('handoff-front', {
  state: () => ({ handled: [] }),
  turn: () => {
    const first = new Front({ name: 'front' });
    first.on('after', new After({ name: 'after' }));
    return new Flow(first);
  },
});

interface Billing extends JsonObject {
  seen: { q: string; from: string | null; via: string[] }[];
}
class Bill extends Node<Billing> {
  override async prep(shared: Billing): Promise<void> {
    const message: Message = this.message!;
    const body = message.body as { q: string };
    shared.seen.push({ q: body.q, from: message.from ?? null, via: message.via ?? [] });
    if (message.replyTo) await this.reply(message, { answer: `billing answers ${body.q}` });
  }
}
const billing = defineAgent<Billing>('handoff-billing', {
  state: () => ({ seen: [] }),
  turn: () => new Bill({ name: 'bill' }),
});

const agents: AgentDefinition<any>[] = [thread, sender, full, front, billing];

describe.each(engines)('%s: agent topics and handoffs', (name) => {
  const setup = useEngine(name);

  it('delivers a publish to the key each subscribed type maps it to, one message id, in publish order', async () => {
    const { engine } = await setup('topics-publish', { flows: [], agents, autoAdvance: true });
    const first = await engine.publish('mail.classified', { thread: 't1', to: ['ann', 'bob', 'ann'], n: 1 });
    expect(first.delivered).toEqual([thread.ref('t1'), sender.ref('ann'), sender.ref('bob')]);
    expect(first.full).toEqual([]);
    await engine.publish('mail.classified', { thread: 't1', to: ['ann'], n: 2 });
    await engine.publish('mail.classified', { to: ['bob'], n: 3 }); // no thread: the thread type skips it
    const nobody = await engine.publish('mail.nobody', { n: 4 });
    expect(nobody.delivered).toEqual([]);
    await waitFor('every turn', async () => {
      const infos = await Promise.all(
        [thread.ref('t1'), sender.ref('ann'), sender.ref('bob')].map((ref) => engine.agent(ref)),
      );
      return infos.map((info) => info?.turns).join() === '2,2,2';
    });
    const got = async (ref: string) => ((await engine.agent(ref))!.state as Log).got;
    const t1 = await got(thread.ref('t1'));
    expect(t1.map((m) => m.body.n)).toEqual([1, 2]);
    expect(t1.every((m) => m.topic === 'mail.classified')).toBe(true);
    expect((await got(sender.ref('ann'))).map((m) => m.body.n)).toEqual([1, 2]);
    expect((await got(sender.ref('bob'))).map((m) => m.body.n)).toEqual([1, 3]);
    // One publish, one id at every subscriber.
    expect((await got(sender.ref('ann')))[0]!.id).toBe(t1[0]!.id);
    expect((await got(sender.ref('bob')))[0]!.id).toBe(first.messageId);
  });

  it("leaves a step's publish with its commit, one id per publish", async () => {
    const { engine } = await setup('topics-step', { flows: [publisher], agents, autoAdvance: true });
    expect((await engine.run(publisher, {})).status).toBe('completed');
    await waitFor('the turns', async () => {
      const infos = await Promise.all(
        [thread.ref('from-run'), sender.ref('r1'), sender.ref('r2')].map((ref) => engine.agent(ref)),
      );
      return infos.map((info) => info?.turns).join() === '2,1,1';
    });
    const fromRun = ((await engine.agent(thread.ref('from-run')))!.state as Log).got;
    expect(fromRun.map((m) => m.body.n)).toEqual([1, 2]);
    expect(((await engine.agent(sender.ref('r1')))!.state as Log).got[0]!.id).toBe(fromRun[0]!.id);
    expect(fromRun[0]!.id).not.toBe(fromRun[1]!.id);
  });

  it('skips a subscriber whose inbox is full and names it; a send to it is refused', async () => {
    const { engine } = await setup('topics-full', { flows: [], agents, autoAdvance: false });
    const ref = full.ref('only');
    expect((await engine.publish('mail.full', { n: 1 })).delivered).toEqual([ref]);
    await waitFor('its turn to hold the message', async () => (await engine.agent(ref))?.running !== undefined);
    expect(await engine.publish('mail.full', { n: 2 })).toMatchObject({ delivered: [], full: [ref] });
    await expect(engine.send(ref, { n: 3 })).rejects.toMatchObject({
      code: 'MAILBOX_FULL',
      message: expect.stringContaining(ref) as unknown,
    });
    expect((await engine.agent(ref))!.inbox).toBe(1);
    expect(await engine.deleteAgent(ref)).toBe(true); // cancels the held turn
  });

  it('refuses a bad topic and a mapping that returns no key, delivering nothing', async () => {
    const { engine } = await setup('topics-bad', { flows: [], agents, autoAdvance: true });
    await expect(engine.publish('has space', {})).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(engine.publish('mail.classified', { thread: 7 as unknown as string, to: [] })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining("agent type 'topic-thread'") as unknown,
    });
    expect(() =>
      defineAgent('topic-bad', { state: () => ({}), turn: () => new Record(), subscribe: { 'a b': () => 'k' } }),
    ).toThrow(/topic/);
  });

  it('transfer ends the turn and hands its message on: the new agent answers the original asker', async () => {
    const { engine } = await setup('handoff-transfer', { flows: [], agents, autoAdvance: true });
    const answer = await engine.ask(front.ref('desk'), { q: 'refund?', mode: 'transfer' }, { timeoutMs: 20_000 });
    expect(answer?.body).toEqual({ answer: 'billing answers refund?' });
    await waitFor('the front turn to end', async () => (await engine.agent(front.ref('desk')))?.turns === 1);
    expect((await engine.agent(front.ref('desk')))!.state).toEqual({ handled: ['refund?'] }); // `after` never ran
    // The answer leaves with billing's step; its state commits when its turn ends, a moment later.
    await waitFor("billing's turn to end", async () => (await engine.agent(billing.ref('main')))?.turns === 1);
    const seen = ((await engine.agent(billing.ref('main')))!.state as Billing).seen;
    expect(seen).toEqual([{ q: 'refund?', from: null, via: [front.ref('desk')] }]);
  });

  it("delegate waits for the target's answer in the same turn", async () => {
    const { engine } = await setup('handoff-delegate', { flows: [], agents, autoAdvance: true });
    const answer = await engine.ask(front.ref('desk'), { q: 'invoice?', mode: 'delegate' }, { timeoutMs: 20_000 });
    expect(answer?.body).toEqual({ via: 'front', billing: { answer: 'billing answers invoice?' } });
    await waitFor('the front turn to end', async () => (await engine.agent(front.ref('desk')))?.turns === 1);
    expect((await engine.agent(front.ref('desk')))!.state).toEqual({ handled: ['invoice?', 'after'] });
    await waitFor("billing's turn to end", async () => (await engine.agent(billing.ref('main')))?.turns === 1);
    const seen = ((await engine.agent(billing.ref('main')))!.state as Billing).seen;
    expect(seen).toEqual([{ q: 'invoice?', from: front.ref('desk'), via: [] }]);
  });
});
