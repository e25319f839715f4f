import { decodeMessage, MAX_DEAD_LETTERS, type AgentActivation, type TurnEnd } from '@queueflow/runtime/kernel';
import type { RedisKeys } from './redis-keys.js';

/**
 * The options of ending a turn of agent `ref` (endTurn's `o` in lua/agent-lifecycle.lua), whose
 * keys are `keys`: by end-turn.lua on its own, or by commit-step.lua with the run's last step.
 */
export function turnEndOptions(keys: RedisKeys, ref: string, end: TurnEnd): Record<string, unknown> {
  const values = end.status === 'completed' ? end.values : undefined;
  return {
    status: end.status,
    messageId: end.messageId,
    version: end.version ?? 1,
    now: String(end.now),
    idleTtlMs: end.idleTtlMs ?? 0,
    remindersKey: keys.agentReminders(ref),
    maxDeadLetters: MAX_DEAD_LETTERS,
    valuePrefix: keys.valuePrefix(),
    valuesSuffix: keys.valuesSuffix(),
    ...(values?.refs.length ? { values: values.refs } : {}),
  };
}

/**
 * endTurn's answer (lua/agent-lifecycle.lua): `{}` stale, `{ 1 }` ended, `{ 1, ...activation }`
 * ended and the next turn started.
 */
export function turnEndedOf(reply: (string | number)[]): { result: 'ended' | 'stale'; next?: AgentActivation } {
  if (reply.length === 0) return { result: 'stale' };
  const next = activationOf(reply.slice(1));
  return next ? { result: 'ended', next } : { result: 'ended' };
}

/** A started turn from a script's reply `{ run id, turn, state, version, message JSON }`. */
export function activationOf(reply: (string | number)[]): AgentActivation | undefined {
  if (reply.length < 5) return undefined;
  const [runId, turn, state, version, message] = reply as [string, number, string, string, string];
  return { runId, turn: Number(turn), state, version: Number(version), message: decodeMessage(message) };
}
