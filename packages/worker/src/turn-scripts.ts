/**
 * What the scripts of agent turns take and answer beyond their keys (lua/agent-lifecycle.lua):
 * a turn's end (end-turn.lua, commit-step.lua), the run a turn's start or end makes.
 */
import {
  decodeMessage,
  encodeTarget,
  MAX_DEAD_LETTERS,
  taskId,
  type AgentActivation,
  type TurnEnd,
  type TurnRunTemplate,
  type TurnStart,
  type TurnStarted,
} from '@queueflow/runtime/kernel';
import type { Partitions } from './partitions.js';
import { newRunFields } from './run-hash.js';

/**
 * The options of ending a turn of agent `ref` (endTurn's `o` in lua/agent-lifecycle.lua), whose
 * keys are `keys`: by end-turn.lua on its own, or by commit-step.lua with the run's last step.
 * The next turn's run (TurnEnd.nextRun) is made by the script only when it lives in the key's
 * partition (one script touches one).
 */
export function turnEndOptions(partitions: Partitions, ref: string, end: TurnEnd): Record<string, unknown> {
  const keys = partitions.ofAddress(ref);
  const values = end.status === 'completed' ? end.values : undefined;
  const next = end.nextRun;
  const makes = next !== undefined && partitions.indexOf(next.id) === partitions.indexOfAddress(ref);
  return {
    ...(makes
      ? {
          nextRun: {
            id: next.id,
            key: keys.run(next.id),
            runs: keys.runs(),
            sequence: keys.runsSequence(),
            changes: partitions.home.changes(),
            fields: newRunFields(next).map(String),
            ...(next.takenBy === undefined
              ? {}
              : { takenKey: keys.taken(next.takenBy), taken: taskId({ type: 'step', runId: next.id, step: 0 }) }),
          },
        }
      : {}),
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

/**
 * A started turn from a script's reply `{ run id, turn, state, version, message JSON, made? }`
 * (made: 2 when the script made its run taken, 1 made queued: AgentActivation.made).
 */
export function activationOf(reply: (string | number)[]): AgentActivation | undefined {
  if (reply.length < 5) return undefined;
  const [runId, turn, state, version, message, made] = reply as [string, number, string, string, string, number?];
  const activation = { runId, turn: Number(turn), state, version: Number(version), message: decodeMessage(message) };
  if (made === 2) return { ...activation, made: 'taken' };
  return made === 1 ? { ...activation, made: 'queued' } : activation;
}

/**
 * How the script that starts a turn of an agent in partition `keys` makes its run from
 * `template` (makeTurnRun's `t` in lua/agent-lifecycle.lua).
 */
export function turnRunOptions(
  partitions: Partitions,
  ref: string,
  template: TurnRunTemplate,
): Record<string, unknown> {
  const keys = partitions.ofAddress(ref);
  return {
    flow: template.flow,
    fingerprint: template.fingerprint,
    checkpointTail: template.checkpointTail,
    target: encodeTarget(template.target),
    version: template.version,
    maxStateBytes: template.maxStateBytes,
    ...(template.priority === undefined ? {} : { priority: template.priority }),
    runPrefix: keys.runPrefix(),
    runs: keys.runs(),
    sequence: keys.runsSequence(),
    changes: partitions.home.changes(),
    partition: partitions.indexOfAddress(ref),
    partitions: partitions.count,
    ...(template.takenBy === undefined ? {} : { takenKey: keys.taken(template.takenBy) }),
  };
}

/**
 * The starts of `starts` a transition of run `runId` can take (startDelivered's `starts` in
 * lua/agent-lifecycle.lua): those of agents in the run's partition (one script touches one).
 */
export function turnStartsOptions(
  partitions: Partitions,
  runId: string,
  starts: readonly TurnStart[] | undefined,
  takeable = true,
): Record<string, unknown>[] {
  const here = partitions.indexOf(runId);
  return (starts ?? [])
    .filter(({ ref }) => partitions.indexOfAddress(ref) === here)
    .map(({ ref, first, run }) => {
      // Not takeable: the chain is for a turn the caller starts after (a turn end not in the script).
      const { takenBy, ...untaken } = run ?? {};
      const template = run && (takeable || takenBy === undefined ? run : (untaken as TurnRunTemplate));
      return {
        ref,
        keys: partitions.ofAddress(ref).agentKeys(ref),
        first,
        ...(template === undefined ? {} : { run: turnRunOptions(partitions, ref, template) }),
      };
    });
}

/** startDelivered's answer: per start taken, `{ ref }` or `{ ref, ...activation }`. */
export function turnsStartedOf(reply: unknown): TurnStarted[] | undefined {
  if (!Array.isArray(reply)) return undefined;
  return (reply as (string | number)[][]).map(([ref, ...turn]) => {
    const activation = activationOf(turn);
    return activation ? { ref: String(ref), activation } : { ref: String(ref) };
  });
}
