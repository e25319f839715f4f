import type { RunStore } from '../kernel/run-store.js';
import { parseAgentRef } from './agent-ref.js';

/** The inboxes of one agent type now (metrics `queueflow.agent.inbox.*`). */
export interface InboxDepth {
  type: string;
  /** Messages waiting in its keys' inboxes, the one each running turn handles included. */
  messages: number;
  /** The most any one key holds. */
  deepest: number;
  /** Keys whose inbox holds their type's `capacity` (a send to them is refused, `MAILBOX_FULL`). */
  full: number;
}

/**
 * The inbox depth of each agent type with messages waiting, read from the store's mailboxes
 * (`RunStore.mailboxes`: on Redis a SCAN of the mailbox keys, so meant for a metric reader's
 * interval, not a hot path). `capacityOf` gives a type's `capacity`, when it has one.
 */
export async function inboxDepths(
  store: Pick<RunStore, 'mailboxes'>,
  capacityOf: (type: string) => number | undefined,
): Promise<InboxDepth[]> {
  const byType = new Map<string, InboxDepth>();
  for (const mailbox of await store.mailboxes(0)) {
    const agent = parseAgentRef(mailbox.address);
    if (!agent || mailbox.size === 0) continue;
    const depth = byType.get(agent.type) ?? { type: agent.type, messages: 0, deepest: 0, full: 0 };
    depth.messages += mailbox.size;
    depth.deepest = Math.max(depth.deepest, mailbox.size);
    const capacity = capacityOf(agent.type);
    if (capacity !== undefined && mailbox.size >= capacity) depth.full += 1;
    byType.set(agent.type, depth);
  }
  return [...byType.values()].sort((a, b) => (a.type < b.type ? -1 : 1));
}
