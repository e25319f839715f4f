import {
  budgetError,
  costPassed,
  MAX_CONVERSATION_MESSAGES,
  passedLimit,
  type ConversationBudget,
  type ConversationReceipt,
  type ConversationStore,
  type ConversationTurn,
  type StoredConversation,
} from '../agent/conversation-store.js';
import type { RunError } from '../errors/error-record.js';

/** LocalEngine's conversations: each transition one synchronous change of a map. */
export class MemoryConversationStore implements ConversationStore {
  private readonly conversations = new Map<string, StoredConversation>();
  /** Ids in the order they began: the newest last. */
  private readonly order: string[] = [];

  async begin(id: string, budget: ConversationBudget | undefined, now: number): Promise<void> {
    const conversation = this.open(id, now);
    if (budget) conversation.budget = structuredClone(budget); // the caller's object may change later
  }

  async turnStarted(
    id: string,
    turn: ConversationTurn,
  ): Promise<{ admitted: true } | { admitted: false; error: RunError; running: string[] }> {
    const conversation = this.open(id, turn.now);
    if (conversation.running.includes(turn.runId)) return { admitted: true };
    const refuse = (): { admitted: false; error: RunError; running: string[] } => ({
      admitted: false,
      error: conversation.error!,
      running: conversation.running.slice(),
    });
    if (conversation.status === 'ended') return refuse();
    const limit = passedLimit(conversation.budget, conversation, turn.now);
    if (limit !== undefined) {
      conversation.status = 'ended';
      conversation.error = budgetError(id, limit);
      conversation.updatedAt = turn.now;
      return refuse();
    }
    conversation.turns++;
    conversation.messages++;
    if (!conversation.participants.includes(turn.ref)) conversation.participants.push(turn.ref);
    conversation.log.push({
      id: turn.message.id,
      ...(turn.message.from === undefined ? {} : { from: turn.message.from }),
      to: turn.ref,
      at: turn.message.at,
      runId: turn.runId,
      turn: turn.turn,
    });
    if (conversation.log.length > MAX_CONVERSATION_MESSAGES) conversation.log.shift();
    conversation.running.push(turn.runId);
    conversation.updatedAt = turn.now;
    return { admitted: true };
  }

  async received(id: string, received: ConversationReceipt): Promise<void> {
    const conversation = this.open(id, received.now);
    const { message } = received;
    if (conversation.log.some((entry) => entry.id === message.id && entry.to === received.to)) return;
    if (received.turn === 0 && !conversation.participants.includes(received.to))
      conversation.participants.push(received.to);
    conversation.log.push({
      id: message.id,
      ...(message.from === undefined ? {} : { from: message.from }),
      to: received.to,
      at: message.at,
      runId: received.runId,
      turn: received.turn,
    });
    if (conversation.log.length > MAX_CONVERSATION_MESSAGES) conversation.log.shift();
    conversation.updatedAt = received.now;
  }

  async turnEnded(id: string, runId: string): Promise<void> {
    const conversation = this.conversations.get(id);
    if (!conversation) return;
    conversation.running = conversation.running.filter((running) => running !== runId);
  }

  async spend(
    id: string,
    spent: { ref: string; key: string; amount: number; now: number },
  ): Promise<{ ok: true } | { ok: false; error: RunError; running: string[] }> {
    const conversation = this.open(id, spent.now);
    const byKey = ((conversation.spend ??= {})[spent.ref] ??= {});
    byKey[spent.key] = (byKey[spent.key] ?? 0) + spent.amount;
    conversation.updatedAt = spent.now;
    if (conversation.status === 'running') {
      const limit = costPassed(conversation.budget, conversation.spend);
      if (limit === undefined) return { ok: true };
      conversation.status = 'ended';
      conversation.error = budgetError(id, limit);
    }
    return { ok: false, error: conversation.error!, running: conversation.running.slice() };
  }

  async load(id: string): Promise<StoredConversation | undefined> {
    const conversation = this.conversations.get(id);
    return conversation && structuredClone(conversation);
  }

  async list(options: { limit: number; cursor?: string }): Promise<{ ids: string[]; cursor?: string }> {
    const newest = [...this.order].reverse();
    const from = options.cursor === undefined ? 0 : newest.indexOf(options.cursor) + 1;
    const ids = newest.slice(from, from + options.limit);
    return from + options.limit < newest.length ? { ids, cursor: ids.at(-1)! } : { ids };
  }

  private open(id: string, now: number): StoredConversation {
    let conversation = this.conversations.get(id);
    if (!conversation) {
      conversation = {
        id,
        status: 'running',
        turns: 0,
        messages: 0,
        participants: [],
        log: [],
        running: [],
        startedAt: now,
        updatedAt: now,
      };
      this.conversations.set(id, conversation);
      this.order.push(id);
    }
    return conversation;
  }
}
