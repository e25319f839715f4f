import { nanoid } from 'nanoid';
import { QueueflowError } from '../errors/queueflow-error.js';
import { assertJson, type Json, type JsonObject } from '../json/json.js';
import type { ValueClaim } from '../kernel/claim-check.js';
import type { RunInfo } from '../kernel/engine.js';
import type { RunStore } from '../kernel/run-store.js';
import { newRunId } from '../kernel/run-id.js';
import { checkMessageBody, type Message } from '../mailbox/message.js';
import { agentRef, parseAgentRef } from './agent-ref.js';
import type { AgentStore } from './agent-store.js';
import type { ConversationFork, ForkConversationOptions } from './agent-types.js';
import type { ConversationMessage, ConversationStore, StoredConversation } from './conversation-store.js';
import { patched } from './shared-memory.js';
import { checkOptionNames } from '../core/check-option-names.js';

/** What a fork needs of its engine. */
export interface ForkHost {
  agents: AgentStore;
  runs: RunStore;
  conversations: ConversationStore;
  /** A run's record, with its final `shared` (RunClient.get). */
  get(runId: string): Promise<RunInfo | undefined>;
  /** `shared` at the start of step `step` of a run (RunClient.sharedAt). */
  sharedAt(runId: string, step: number): Promise<JsonObject>;
  /** The version of the states of agent type `type` (its definition's), when this process has it. */
  stateVersion(type: string): number | undefined;
  /** A state as stored: its large values set apart, and their claim (AgentRuntime.encodeState). */
  encodeState(state: JsonObject): { state: string; values?: ValueClaim };
  newMessage(body: Json): Message;
  deliver(addresses: readonly string[], message: Message): Promise<void>;
  /** Starts the turn of an agent that got a message (AgentRuntime.delivered). */
  delivered(addresses: string[]): Promise<void>;
  now(): number;
}

/**
 * `engine.forkConversation` (README "Conversations", fork): a new conversation in which every
 * agent that took a turn in `id` has a copy, under a fork key (`<key>~<tag>`), with the state it
 * had at message `atMessage`: before its first turn at or after that message, else after its last
 * turn before it. The message is delivered again to the copy of its agent (with `body` and the
 * state `patch` when given), and every message of the fork goes to the copies (`Message.forks`).
 * The original conversation and its agents are untouched. Plain runs that took part are not
 * forked. An ask's answer goes to the fork's own reply address (`ConversationFork.replyTo`).
 * @throws QueueflowError `INVALID_OPTION` for an unknown conversation or message, a bad patch or
 *   body; `RUN_NOT_FOUND` when a turn's run it needs has expired.
 */
export async function forkConversation(
  host: ForkHost,
  id: string,
  options: ForkConversationOptions,
): Promise<ConversationFork> {
  const stored = await host.conversations.load(id);
  if (!stored) throw invalid(`forkConversation: no conversation '${id}'`);
  if (typeof options?.atMessage !== 'string') throw invalid('forkConversation: expected `atMessage`, a message id');
  checkOptionNames('forkConversation', options, ['atMessage', 'body', 'patch']);
  const at = stored.log.findIndex((message) => message.id === options.atMessage);
  if (at === -1)
    throw invalid(
      `forkConversation: conversation '${id}' has no message '${options.atMessage}' in its record (engine.conversation(id).messages)`,
    );
  const entry = stored.log[at]!;
  if (options.body !== undefined) checkMessageBody(options.body, 'forkConversation: `body`');
  if (entry.turn === 0 || !parseAgentRef(entry.to))
    throw invalid(
      `forkConversation: message '${entry.id}' went to a plain run ('${entry.to}'): fork at a message an agent's turn handled`,
    );
  const original = (await host.runs.load(entry.runId))?.turn?.message;
  if (!original) throw runGone(entry.runId, options.atMessage);
  if (original.id !== entry.id)
    throw invalid(
      `forkConversation: message '${entry.id}' is an answer that a turn of '${entry.to}' received, not the message it handled ('${original.id}'): fork at that one`,
    );

  const tag = nanoid(8);
  const forkId = `${id.slice(0, 190)}~${tag}`;
  // A fork of a fork: its participants are copies; the team's code names the first agents.
  const earlier = original.forks ?? {};
  const baseOf = (ref: string): string => Object.keys(earlier).find((base) => earlier[base] === ref) ?? ref;
  const agents: Record<string, string> = {};
  const forks: Record<string, string> = {};
  const states = new Map<string, JsonObject>();
  for (const ref of stored.participants) {
    if (!parseAgentRef(ref)) continue; // a plain run's id
    const base = baseOf(ref);
    const { type, key } = parseAgentRef(base)!;
    agents[ref] = agentRef(type, `${key.slice(0, 240)}~${tag}`);
    forks[base] = agents[ref];
    forks[ref] = agents[ref];
    states.set(ref, await stateAt(host, stored, at, ref));
  }
  if (options.patch !== undefined) {
    const state = patched('forkConversation: `patch`', states.get(entry.to)!, options.patch);
    if (typeof state !== 'object' || state === null || Array.isArray(state))
      throw invalid(`forkConversation: the patch makes the state of '${entry.to}' no object`);
    states.set(entry.to, state as JsonObject);
  }
  for (const [ref, state] of states) {
    assertJson(state, `the state of '${ref}' at message '${options.atMessage}'`);
    // The version its state has now: a turn's shared is the state as migrated then.
    const agent = await host.agents.loadAgent(ref);
    const encoded = host.encodeState(state);
    await host.agents.seedAgent(agents[ref]!, {
      ...encoded,
      version: agent?.version ?? host.stateVersion(parseAgentRef(ref)!.type) ?? 1,
      incarnation: newRunId(),
    });
  }
  await host.conversations.begin(forkId, stored.budget, host.now());
  const { waiting: _waiting, replyTo, ...kept } = original;
  const message: Message = {
    ...kept,
    id: host.newMessage(null).id,
    body: options.body === undefined ? original.body : options.body,
    sentAt: host.now(),
    conversation: forkId,
    forks,
    ...(replyTo === undefined ? {} : { replyTo: `${forkId}.reply` }),
  };
  const to = agents[entry.to]!;
  await host.deliver([to], message);
  await host.delivered([to]);
  return { id: forkId, agents, messageId: message.id, ...(message.replyTo ? { replyTo: message.replyTo } : {}) };
}

/** The state agent `ref` had at message `at` of the conversation's record (see forkConversation). */
async function stateAt(host: ForkHost, stored: StoredConversation, at: number, ref: string): Promise<JsonObject> {
  // Answers a turn received are logged too (with that turn's run): its start is the state then.
  const next = stored.log.slice(at).find((message) => message.to === ref);
  if (next) return startOf(host, next);
  const last = stored.log.slice(0, at).findLast((message) => message.to === ref)!;
  const run = await host.get(last.runId);
  if (!run) throw runGone(last.runId, last.id);
  // A turn that failed or was cancelled left the state as it found it.
  return run.status === 'completed' ? run.shared : startOf(host, last);
}

/** The state at the start of the turn that handled `message`. */
async function startOf(host: ForkHost, message: ConversationMessage): Promise<JsonObject> {
  try {
    return await host.sharedAt(message.runId, 0);
  } catch (error) {
    if (error instanceof QueueflowError && error.code === 'RUN_NOT_FOUND') throw runGone(message.runId, message.id);
    throw error;
  }
}

function runGone(runId: string, messageId: string): QueueflowError {
  return new QueueflowError(
    'RUN_NOT_FOUND',
    `forkConversation: the turn run '${runId}' that handled message '${messageId}' has expired (past the retention): its state is gone`,
    { retryable: false },
  );
}

function invalid(message: string): QueueflowError {
  return new QueueflowError('INVALID_OPTION', message, { retryable: false });
}
