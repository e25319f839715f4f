import type { RunError } from '../errors/error-record.js';
import type { Json, JsonObject } from '../json/json.js';
import type { PatchOperation } from '../json/merge-patches.js';
import type { Message, SendOptions } from '../mailbox/message.js';
import type { ConversationBudget, ConversationMessage } from './conversation-store.js';
import type { ReminderInfo } from './reminders.js';

/** What the engines answer about agents (README "Agents"). Times are epoch milliseconds. */

/** A key as `engine.agent(ref)` shows it. */
export interface AgentInfo {
  type: string;
  key: string;
  /** The last committed state. */
  state: JsonObject;
  /** Committed turns. */
  turns: number;
  /** Messages in its inbox (the one a running turn handles included). */
  inbox: number;
  /**
   * Its type's `capacity`, when it has one and this engine was given the type; the inbox is full
   * (sends refused with `MAILBOX_FULL`, or parked) when `inbox` reaches it.
   */
  capacity?: number;
  /** The run of the turn running now. */
  running?: string;
  /** Messages whose turn failed or was cancelled, oldest first: redeliver one with `engine.redeliver`. */
  failed: { message: Message; error: RunError; runId: string; at: number }[];
  /** When its last turn ended. */
  lastTurnAt?: number;
  /** Its pending reminders (`this.remind`), the next due first. */
  reminders: ReminderInfo[];
}

/** One key in `engine.agents()`. */
export interface AgentListing {
  ref: string;
  type: string;
  key: string;
}

/** Options of `engine.agents`. */
export interface ListAgentsOptions {
  /** Only keys of this type. */
  type?: string;
  /** Most keys listed. @defaultValue 100 */
  limit?: number;
  /** The `cursor` of the page before: keys after it. */
  cursor?: string;
}

/** A page of keys, in address order; `cursor` when more follow. */
export interface AgentPage {
  agents: AgentListing[];
  cursor?: string;
}

/** One ended turn of a key, as `engine.agentHistory(ref)` lists it (while its run is retained). */
export interface AgentTurnInfo {
  turn: number;
  /** The turn's run (`engine.get`, `history`, `retry`, `fork` take it). */
  runId: string;
  status: 'completed' | 'failed' | 'cancelled';
  /** The message it handled (absent once its run has expired). */
  message?: Message;
  /** When it ended. */
  at: number;
  /**
   * A completed turn: RFC 6902 JSON Patch from the state before to the state after (its steps'
   * patches in order; absent once its run has expired).
   */
  patch?: PatchOperation[];
}

/** `conversation` of `engine.send`, `engine.ask` and `engine.publish` (README "Conversations"). */
export interface ConversationOptions {
  /**
   * The conversation to start or continue: 1 to 200 characters without whitespace.
   * @defaultValue a new one, whose id is the id of the message that starts it
   */
  id?: string;
  /** Its limits; past any, no further turn of it runs (`CONVERSATION_BUDGET`). */
  budget?: ConversationBudget;
}

/** Options of `engine.send`. */
export interface EngineSendOptions extends SendOptions {
  /** The message starts or continues a conversation. */
  conversation?: ConversationOptions;
}

/** Options of `engine.publish`. */
export interface PublishOptions {
  /** The messages start or continue a conversation. */
  conversation?: ConversationOptions;
}

/** A conversation as `engine.conversation(id)` shows it. Times are epoch milliseconds. */
export interface ConversationInfo {
  id: string;
  /** `ended` once past its budget (then `error` says which limit). */
  status: 'running' | 'ended';
  /** Turns its agents took. */
  turns: number;
  /** The agents that took a turn in it, in the order they joined. */
  participants: string[];
  /** The messages its turns handled, in the order their turns started (the last 1,000). */
  messages: ConversationMessage[];
  /** Its turns parked now, and on what: an ask's reply address, or a mailbox. */
  waits: { agent: string; runId: string; on: string; since: number }[];
  /** What its turns spent, per agent, then key (`this.spend`), counted at each spend. */
  spend: Record<string, Record<string, number>>;
  budget?: ConversationBudget;
  startedAt: number;
  updatedAt: number;
  error?: RunError;
}

/** Options of `engine.ask`. */
export interface AskOptions {
  /** How long to wait for the answer, in milliseconds; then `ask` resolves `undefined`. @defaultValue 30000 */
  timeoutMs?: number;
  /** The question starts or continues a conversation. */
  conversation?: ConversationOptions;
}

/** What `engine.publish` did. */
export interface PublishResult {
  /** The id every subscriber's message has. */
  messageId: string;
  /** The agents it was delivered to, in subscription order. */
  delivered: string[];
  /** Subscribers whose inbox held their type's `capacity`: they did not get it. */
  full: string[];
}

/** Options of `engine.forkConversation`. */
export interface ForkConversationOptions {
  /** The id of a message in the conversation's record (`messages[i].id`): it is delivered again. */
  atMessage: string;
  /**
   * A JSON Patch (RFC 6902) of the state of the agent that gets the message again, applied to its
   * state restored at that message.
   */
  patch?: PatchOperation[];
  /** The body the message is delivered again with. @defaultValue the original body */
  body?: Json;
}

/** A conversation forked at a message (`engine.forkConversation`). */
export interface ConversationFork {
  /** The new conversation's id (`engine.conversation(id)`). */
  id: string;
  /** Each participant's address → its fork's (`agent:<type>/<key>~<fork>`): read these with `engine.agent`. */
  agents: Record<string, string>;
  /** The id of the message delivered again, to the fork of its agent. */
  messageId: string;
  /** Where the answer goes when that message was an ask (the original asker waits in the original). */
  replyTo?: string;
}
