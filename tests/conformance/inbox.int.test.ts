/**
 * Contract: `engine.mailboxes` and `engine.answer` (DESIGN "Mailboxes", "Operating runs"): the
 * inbox of what waiting agents need. A run whose `ask` to `human` waits shows as a question in the
 * `human` mailbox (with its `replyTo`) and as a run parked on that reply address; `answer` takes
 * the question off and replies, which wakes the run. MESSAGE_NOT_FOUND for a message no longer
 * there, INVALID_OPTION for one that asks nothing (no `replyTo`).
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type MailboxInfo, type Message } from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

/** Asks `human` the question in `shared` and keeps the answer. */
class AskHuman extends Node<S> {
  override async prep(shared: S): Promise<Message | undefined> {
    return this.ask('human', { q: shared.question as string });
  }
  override post(shared: S, reply: Message | undefined): void {
    shared.answer = reply?.body ?? null;
  }
}
const askHuman = defineFlow('inbox-ask', () => new Flow(new AskHuman({ name: 'ask-human' })));
const flows = [askHuman];

/** The mailbox at `address`, if listed. */
const boxAt = (boxes: MailboxInfo[], address: string): MailboxInfo | undefined =>
  boxes.find((box) => box.address === address);

describe.each(engines)('%s: mailboxes and answer', (name) => {
  const setup = useEngine(name);

  it('lists a parked ask: its question at `human`, the run parked on the reply address; answer completes the run', async () => {
    const { engine, until } = await setup('inbox-ask', { flows });
    const handle = await engine.start<S>(askHuman, { question: `ready, ${name}?` });
    await until(handle.id, 'the run to park', (info) => info.status === 'waiting');

    const boxes = await engine.mailboxes();
    const human = boxAt(boxes, 'human');
    expect(human).toMatchObject({ address: 'human', size: 1, parked: [] });
    expect(human!.messages).toHaveLength(1);
    const question = human!.messages[0]!;
    expect(question).toMatchObject({ body: { q: `ready, ${name}?` } });
    expect(typeof question.id).toBe('string');
    expect(typeof question.replyTo).toBe('string');
    const replyBox = boxAt(boxes, question.replyTo!);
    expect(replyBox).toMatchObject({ size: 0, messages: [] });
    expect(replyBox!.parked).toEqual([
      { runId: handle.id, flow: 'inbox-ask', node: 'ask-human', since: expect.any(Number), deadline: null },
    ]);
    expect(boxes.map((box) => box.address).sort()).toEqual(['human', question.replyTo!].sort());

    await engine.answer('human', question.id, { yes: true });
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.answer).toEqual({ yes: true });
    await waitFor('the inbox to empty', async () => (await engine.mailboxes()).length === 0);

    // Answered once: the question is no longer there.
    await expect(engine.answer('human', question.id, { yes: false })).rejects.toMatchObject({
      code: 'MESSAGE_NOT_FOUND',
    });
  });

  it('refuses to answer a message that asks nothing (no replyTo) and leaves it where it is', async () => {
    const { engine } = await setup('inbox-no-reply-to', { flows });
    await engine.send('human', 'just so you know');
    const [box] = await engine.mailboxes();
    expect(box).toMatchObject({ address: 'human', size: 1, parked: [] });
    const message = box!.messages[0]!;
    expect(message.replyTo).toBeUndefined();

    await expect(engine.answer('human', message.id, 'noted')).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    expect(await engine.mailboxes()).toEqual([box]);
    await expect(engine.answer('human', 'no-such-message', 'x')).rejects.toMatchObject({
      code: 'MESSAGE_NOT_FOUND',
    });
  });

  it('lists up to `messages` messages per mailbox, oldest first, with the full size', async () => {
    const { engine } = await setup('inbox-limit', { flows });
    for (const body of ['one', 'two', 'three']) await engine.send('queue', body);
    expect((await engine.mailboxes({ messages: 2 }))[0]).toMatchObject({ address: 'queue', size: 3 });
    expect((await engine.mailboxes({ messages: 2 }))[0]!.messages.map((m) => m.body)).toEqual(['one', 'two']);
    expect((await engine.mailboxes({ messages: 0 }))[0]).toMatchObject({ size: 3, messages: [] });
    await expect(engine.mailboxes({ messages: -1 })).rejects.toMatchObject({ code: 'INVALID_OPTION' });
  });
});
