/**
 * The mailbox of one step on an engine (src/mailbox/step-mailbox.ts): receives reserve through the
 * store in call order, except on the step's own reply address while its question has not left
 * (it leaves with the step's commit or park): nobody can have answered it, so an `ask` parks
 * without a reservation round trip. A step run again after its park asks the store as before.
 */
import { describe, expect, it } from 'vitest';
import { StepMailbox } from '../src/mailbox/step-mailbox.js';
import type { Message } from '../src/mailbox/message.js';

function mailbox(replay: { sent: number } = { sent: 0 }, held = new Map<number, Message>()) {
  const calls: [number, string][] = [];
  const reservations = {
    reserve: async (ordinal: number, address: string): Promise<Message | undefined> => {
      calls.push([ordinal, address]);
      return held.get(ordinal);
    },
    reserveAny: async (ordinal: number, addresses: readonly string[]) => {
      calls.push([ordinal, addresses.join('|')]);
      const message = held.get(ordinal);
      return message && { address: addresses[0]!, message };
    },
  };
  const box = new StepMailbox(reservations, { runId: 'run', step: 3 }, replay, () => 1000);
  return { box, calls };
}

async function ask(box: StepMailbox, to: string): Promise<unknown> {
  const replyTo = box.replyAddress();
  await box.send(to, { q: 1 }, { replyTo });
  return box.receive(replyTo).catch((signal: Error) => signal.name);
}

describe('StepMailbox', () => {
  it('parks an ask whose question has not left without asking the store', async () => {
    const { box, calls } = mailbox();
    expect(await ask(box, 'agent')).toBe('ParkSignal');
    expect(calls).toEqual([]);
    expect(box.parkRequest).toEqual({ ordinal: 0, address: 'run.3.reply0', deadline: null });
    expect(box.outbox.map((sent) => [sent.address, sent.message.replyTo])).toEqual([['agent', 'run.3.reply0']]);
  });

  it('reserves through the store once the question left with a park (the step runs again)', async () => {
    const answer: Message = { id: 'a1', body: { yes: true }, sentAt: 1 };
    const { box, calls } = mailbox({ sent: 1 }, new Map([[0, answer]]));
    expect(await ask(box, 'agent')).toEqual(answer);
    expect(calls).toEqual([[0, 'run.3.reply0']]);
    expect(box.outbox).toEqual([]);
  });

  it('reserves through the store for any other address, a replyTo not its own included', async () => {
    const { box, calls } = mailbox();
    await box.send('agent', { q: 1 }, { replyTo: 'shared-answers' });
    expect(await box.receive('shared-answers').catch((signal: Error) => signal.name)).toBe('ParkSignal');
    expect(calls).toEqual([[0, 'shared-answers']]);
  });

  it('receiveAny parks on all its addresses with one receive ordinal', async () => {
    const { box, calls } = mailbox();
    const signal = await box.receiveAny(['a', 'b'], { timeoutMs: 500 }).catch((error: Error) => error.name);
    expect(signal).toBe('ParkSignal');
    expect(calls).toEqual([[0, 'a|b']]);
    expect(box.parkRequest).toEqual({ ordinal: 0, address: 'a', addresses: ['a', 'b'], deadline: 1500 });
  });

  it('receiveAny refuses an empty list, a repeated address and an agent inbox, naming them', async () => {
    const { box } = mailbox();
    await expect(box.receiveAny([])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'receiveAny: expected `addresses` to be a non-empty array of addresses, got `[]`',
    });
    await expect(box.receiveAny(['a', 'b', 'a'])).rejects.toThrow(
      "receiveAny: `addresses[2]` repeats 'a': each mailbox once",
    );
    await expect(box.receiveAny(['a', 'b c'])).rejects.toThrow('`addresses[1]`');
    await expect(box.receiveAny(['a', 'agent:desk/1'])).rejects.toThrow(
      "receiveAny: 'agent:desk/1' is an agent's inbox",
    );
  });
});
