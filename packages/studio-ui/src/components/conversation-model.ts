/**
 * A conversation's record (`engine.conversation(id)`) as the Conversations page draws it: lanes,
 * arrows with asks and replies paired, the questions its turns left for people, and what each
 * parked turn waits for. Pure functions of the record and the mailboxes.
 */
import type { ConversationInfo, ConversationMessage, MailboxInfo, Message } from '../api/types';

/** The lane of messages sent from outside any run: `engine.send`, a client's `ask`, a person's answer. */
export const OUTSIDE = '(outside)';

export interface Lane {
  /** An agent's address, a plain run's id, a person's mailbox address, or {@link OUTSIDE}. */
  id: string;
  /** Short text for the lane's head (`type/key` for an agent). */
  label: string;
  kind: 'agent' | 'run' | 'person' | 'outside';
}

/**
 * - `send`: a message a turn handled (none of the others).
 * - `ask` / `reply`: an ask, paired with the answer its turn received.
 * - `answer`: a message a turn received from outside any run.
 * - `received`: a message a turn received that pairs with no ask in the record.
 */
type ArrowKind = 'send' | 'ask' | 'reply' | 'answer' | 'received';

export interface Arrow {
  /** Its place in the record, from 0. */
  index: number;
  message: ConversationMessage;
  from: string;
  to: string;
  kind: ArrowKind;
  /** The index of its ask or reply. */
  pair?: number;
  /**
   * The message its turn handled (the first record of that run), not one the turn received while
   * it ran: only those can be forked at (`engine.forkConversation`).
   */
  handled: boolean;
}

/** A question a turn of the conversation asked a person: it waits in a mailbox no agent reads. */
export interface PendingAsk {
  address: string;
  message: Message;
  /** The parked turn that asked it, when the conversation lists it among its waits. */
  asker?: string;
}

/** A parked turn, and what it waits for. */
export interface WaitEdge {
  agent: string;
  runId: string;
  since: number;
  /** The address it is parked on (an ask's reply address, or a mailbox). */
  on: string;
  /** Whom it waits for: the agent or person asked, else the address itself. */
  target: string;
  kind: 'agent' | 'person' | 'address';
}

export function isAgentRef(address: string): boolean {
  return address.startsWith('agent:');
}

/** `agent:writer/1` → `writer/1`; a run id or an address as it is. */
export function shortName(address: string): string {
  return isAgentRef(address) ? address.slice('agent:'.length) : address;
}

/**
 * The arrows of the record, in its order, with asks and replies paired. The record says neither:
 * a turn's run is logged once with the message it handled, then again with each message its
 * steps received (`receive`, the answer of an `ask`). Such a received message from B to A pairs
 * with the last unpaired message before it from A to B: A's ask, handled by B's turn.
 *
 * What this cannot pair, from the record alone:
 * - an ask to a person: it went to a mailbox no turn handles, so it is not in the record (while it
 *   waits, it shows among the {@link pendingAsks}); nor is the person's answer (`engine.answer`
 *   sends it without the conversation). A message without a sender that a turn received (an
 *   `engine.send` with the conversation's id to a mailbox a turn reads) shows as `answer`;
 * - an answer from an agent that took the ask over (`handoff` with `transfer`): its sender is not
 *   the agent asked (`received`);
 * - an ask whose answer has not come yet, or came to a turn past the record's last 1,000 (`send`);
 * - a message a turn `receive`d from B after sending B a plain message is taken for its reply.
 */
export function arrowsOf(info: ConversationInfo): Arrow[] {
  const seenRuns = new Set<string>();
  const arrows: Arrow[] = info.messages.map((message, index) => {
    const handled = !seenRuns.has(message.runId);
    seenRuns.add(message.runId);
    const kind: ArrowKind = handled ? 'send' : message.from === undefined ? 'answer' : 'received';
    return { index, message, from: message.from ?? OUTSIDE, to: message.to, kind, handled };
  });
  for (const reply of arrows) {
    if (reply.kind !== 'received') continue;
    for (let i = reply.index - 1; i >= 0; i--) {
      const ask = arrows[i]!;
      if (ask.kind !== 'send' || ask.from !== reply.to || ask.to !== reply.from) continue;
      ask.kind = 'ask';
      ask.pair = reply.index;
      reply.kind = 'reply';
      reply.pair = ask.index;
      break;
    }
  }
  return arrows;
}

/**
 * The questions a turn of conversation `id` asked a person that wait for an answer: messages with
 * a reply address and this conversation, in mailboxes that are no agent's inbox (an agent
 * answers what waits in its own inbox with its next turn).
 */
export function pendingAsks(id: string, info: ConversationInfo, mailboxes: MailboxInfo[] | undefined): PendingAsk[] {
  const askers = new Map(info.waits.map((wait) => [wait.on, wait.agent] as const));
  return (mailboxes ?? []).flatMap((box) =>
    isAgentRef(box.address)
      ? []
      : box.messages
          .filter((message) => message.replyTo !== undefined && message.conversation === id)
          .map((message) => {
            const asker = askers.get(message.replyTo!);
            return { address: box.address, message, ...(asker === undefined ? {} : { asker }) };
          }),
  );
}

/**
 * What each parked turn waits for: the mailbox holding the question whose reply address it is
 * parked on (a person's, or an agent's inbox before its turn takes it); else the agent its turn
 * asked last (the ask is in the record once the asked agent's turn took it); else the address.
 */
export function waitEdges(info: ConversationInfo, arrows: Arrow[], mailboxes: MailboxInfo[] | undefined): WaitEdge[] {
  const askedAt = new Map<string, string>();
  for (const box of mailboxes ?? [])
    for (const message of box.messages) if (message.replyTo) askedAt.set(message.replyTo, box.address);
  return info.waits.map((wait) => {
    const base = { agent: wait.agent, runId: wait.runId, since: wait.since, on: wait.on };
    const box = askedAt.get(wait.on);
    if (box !== undefined) return { ...base, target: box, kind: isAgentRef(box) ? 'agent' : 'person' };
    const start = arrows.findIndex((arrow) => arrow.message.runId === wait.runId);
    const asked = arrows.findLast(
      (arrow) => arrow.index > start && arrow.from === wait.agent && arrow.handled && arrow.pair === undefined,
    );
    if (start >= 0 && asked) return { ...base, target: asked.to, kind: 'agent' };
    if (isAgentRef(wait.on)) return { ...base, target: wait.on, kind: 'agent' };
    return { ...base, target: wait.on, kind: 'address' };
  });
}

/**
 * The lanes, left to right: outside (when a message came from there), the senders and receivers
 * in the order the record first names them (a fork's first message comes from an agent of the
 * original: its lane is the first), participants named by no message, then the people asked.
 */
export function lanesOf(info: ConversationInfo, arrows: Arrow[], asks: PendingAsk[]): Lane[] {
  const lanes: Lane[] = [];
  const seen = new Set<string>();
  const add = (id: string, kind: Lane['kind']): void => {
    if (seen.has(id)) return;
    seen.add(id);
    lanes.push({ id, kind, label: id === OUTSIDE ? 'outside' : shortName(id) });
  };
  const kindOf = (id: string): Lane['kind'] => (isAgentRef(id) ? 'agent' : 'run');
  if (arrows.some((arrow) => arrow.from === OUTSIDE)) add(OUTSIDE, 'outside');
  for (const arrow of arrows) {
    add(arrow.from, kindOf(arrow.from));
    add(arrow.to, kindOf(arrow.to));
  }
  for (const participant of info.participants) add(participant, kindOf(participant));
  for (const ask of asks) add(ask.address, isAgentRef(ask.address) ? 'agent' : 'person');
  return lanes;
}

/** What each key's spend adds up to over the conversation's agents. */
export function spentByKey(info: ConversationInfo): Record<string, number> {
  const spent: Record<string, number> = {};
  for (const byKey of Object.values(info.spend))
    for (const [key, amount] of Object.entries(byKey)) spent[key] = (spent[key] ?? 0) + amount;
  return spent;
}
