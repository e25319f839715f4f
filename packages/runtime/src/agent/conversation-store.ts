import type { RunError } from '../errors/error-record.js';

/**
 * The storage contract of conversations (README "Conversations"): what the turns of a
 * conversation did, counted against its budget. A conversation is the set of turns whose messages
 * carry its id (a message sent from a turn carries the turn's). Each operation is one atomic
 * transition (a Lua script on Redis, in the partition of the conversation's id).
 */
export interface ConversationStore {
  /**
   * Starts conversation `id` with `budget` (`engine.send(…, { conversation })`); one that exists
   * keeps its record and takes the budget given, if any.
   */
  begin(id: string, budget: ConversationBudget | undefined, now: number): Promise<void>;
  /**
   * A turn of agent `turn.ref` is about to handle `turn.message` of conversation `id`. Admitted:
   * it is counted, its agent joins the participants, its message is recorded, and its run is
   * among the running turns. Refused when the conversation has ended, or when the turn would go
   * past a limit of the budget: the conversation then ends with `CONVERSATION_BUDGET`, and the
   * runs of its running turns are returned (the caller cancels them). A turn admitted before (its
   * run id is among the running) is admitted again without counting.
   */
  turnStarted(
    id: string,
    turn: ConversationTurn,
  ): Promise<{ admitted: true } | { admitted: false; error: RunError; running: string[] }>;
  /**
   * Message `received.message` of conversation `id` was received by a step (`receive`, `ask`):
   * of a plain run (`received.to` is its id: it joins the participants) or of an agent's turn
   * (the answer to an ask, `to` the agent). Recorded once per message and receiver; not counted
   * against the budget (turns and the messages they handle are).
   */
  received(id: string, received: ConversationReceipt): Promise<void>;
  /** The turn of run `runId` ended: it leaves the running turns. */
  turnEnded(id: string, runId: string): Promise<void>;
  /**
   * Agent `ref` spent `amount` of `key` in conversation `id` (`this.spend`): added to what it
   * spent. Spent past the budget's `cost` (the sum over the participants), the conversation ends
   * with `CONVERSATION_BUDGET`; refused then, and whenever the conversation has ended, with the
   * runs of its running turns (the caller cancels them). What is spent is counted either way.
   */
  spend(
    id: string,
    spent: { ref: string; key: string; amount: number; now: number },
  ): Promise<{ ok: true } | { ok: false; error: RunError; running: string[] }>;
  load(id: string): Promise<StoredConversation | undefined>;
  /** Conversation ids, newest first, `limit` at most after `cursor`. */
  list(options: { limit: number; cursor?: string }): Promise<{ ids: string[]; cursor?: string }>;
}

/** Limits of a conversation (`engine.send(…, { conversation: { budget } })`). */
export interface ConversationBudget {
  /** Most turns it may take, over all its agents. */
  turns?: number;
  /** Most messages its turns may handle (each turn handles one; a turn that fails counts). */
  messages?: number;
  /** Longest it may go on, in ms from its first message. */
  wallMs?: number;
  /**
   * Most of `key` its turns may spend together (`this.spend(key, n)`, tokens or dollars, say):
   * the spend that goes past `max` ends the conversation.
   */
  cost?: { key: string; max: number };
}

/** A turn as {@link ConversationStore.turnStarted} records it. Times are epoch ms. */
export interface ConversationTurn {
  ref: string;
  runId: string;
  turn: number;
  message: { id: string; from?: string | undefined; at: number };
  now: number;
}

/** A message received by a step, as {@link ConversationStore.received} records it. Times are epoch ms. */
export interface ConversationReceipt {
  /** The receiver: an agent's address (its turn), else the plain run's id. */
  to: string;
  runId: string;
  /** The turn's number at its agent; 0 for a plain run. */
  turn: number;
  message: { id: string; from?: string | undefined; at: number };
  now: number;
}

/** One message a turn of the conversation handled, or a step received. */
export interface ConversationMessage {
  id: string;
  /** Its sender (`Message.from`); absent for a client's `engine.send`. */
  from?: string;
  /** The agent whose turn handled (or received) it, or the plain run that received it. */
  to: string;
  /** When it was sent, epoch ms. */
  at: number;
  /** The turn's run (`engine.get`, `history`, `fork` take it). */
  runId: string;
  /** The turn's number at its agent; 0 for a plain run. */
  turn: number;
}

/** A conversation as stored. Times are epoch ms. */
export interface StoredConversation {
  id: string;
  status: 'running' | 'ended';
  turns: number;
  /** Messages handled (one per turn). */
  messages: number;
  participants: string[];
  /** The messages handled, oldest first: the last {@link MAX_CONVERSATION_MESSAGES}. */
  log: ConversationMessage[];
  /** Runs of its turns running now. */
  running: string[];
  budget?: ConversationBudget;
  startedAt: number;
  updatedAt: number;
  /** Why it ended (`CONVERSATION_BUDGET`, naming the limit). */
  error?: RunError;
  /** What its turns spent (`this.spend`), by agent, then key. */
  spend?: Record<string, Record<string, number>>;
}

/** Messages a conversation's record keeps, oldest dropped first. */
export const MAX_CONVERSATION_MESSAGES = 1000;

/**
 * Whether a turn may start in a conversation that took `turns` turns (and `messages` messages),
 * started at `startedAt`, under `budget`, at `now`: the limit it would pass, else `undefined`.
 * Mirrored by the Redis store's conversations.lua.
 */
export function passedLimit(
  budget: ConversationBudget | undefined,
  record: { turns: number; messages: number; startedAt: number; spend?: StoredConversation['spend'] },
  now: number,
): string | undefined {
  if (!budget) return undefined;
  if (budget.turns !== undefined && record.turns + 1 > budget.turns) return `turns: ${budget.turns}`;
  if (budget.messages !== undefined && record.messages + 1 > budget.messages) return `messages: ${budget.messages}`;
  if (budget.wallMs !== undefined && now - record.startedAt > budget.wallMs) return `wallMs: ${budget.wallMs}`;
  return costPassed(budget, record.spend);
}

/** How far past a cost's max a sum may land by rounding alone, relative to max (mirrored in conversations.lua). */
const SPEND_TOLERANCE = 1e-9;

/** The cost limit `spend` went past (the sum over the agents of the budget's key), else `undefined`. */
export function costPassed(
  budget: ConversationBudget | undefined,
  spend: StoredConversation['spend'],
): string | undefined {
  const cost = budget?.cost;
  if (!cost) return undefined;
  const total = Object.values(spend ?? {}).reduce((sum, byKey) => sum + (byKey[cost.key] ?? 0), 0);
  // Past max, not at it: sums of fractions (0.1 + 0.2) land a rounding error above their value.
  return total - cost.max > SPEND_TOLERANCE * Math.max(1, cost.max) ? `cost: ${cost.max} ${cost.key}` : undefined;
}

/** The error a conversation over its budget ends with. */
export function budgetError(id: string, limit: string): RunError {
  return {
    code: 'CONVERSATION_BUDGET',
    message: `conversation '${id}' reached its budget (${limit}): no further turn runs`,
  };
}
