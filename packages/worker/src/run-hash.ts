import type { RunStatus } from '@queueflow/runtime';
import {
  type AgentTurn,
  type NewRun,
  encodeTarget,
  decodeJson,
  decodeReplay,
  decodeRunError,
  decodeTarget,
  type StoredRun,
} from '@queueflow/runtime/kernel';

/**
 * A run's record as its Redis hash holds it: the fields scripts read and write (`status`, `step`,
 * `parkCount`, `checkpoint`...), all strings. This module is the one place that reads them back.
 */
export function runOfHash(id: string, hash: Record<string, string | undefined>): StoredRun {
  const number = (field: string): number | undefined => (hash[field] === undefined ? undefined : Number(hash[field]));
  return {
    id,
    flow: hash.flow ?? '',
    fingerprint: hash.fingerprint ?? '',
    status: hash.status as RunStatus,
    step: number('step') ?? 0,
    attempt: number('attempt') ?? 0,
    checkpoint: hash.checkpoint ?? '{"shared":{},"frames":[]}',
    target: hash.target ? decodeTarget(hash.target) : { node: undefined, maxAttempts: 1 },
    createdAt: number('createdAt') ?? 0,
    ...(hash.startedAt !== undefined ? { startedAt: Number(hash.startedAt) } : {}),
    updatedAt: number('updatedAt') ?? 0,
    ...(hash.finishedAt !== undefined ? { finishedAt: Number(hash.finishedAt) } : {}),
    ...(hash.lastAction !== undefined ? { lastAction: hash.lastAction } : {}),
    ...(hash.error ? { error: decodeRunError(hash.error) } : {}),
    parkCount: Number(hash.parkCount ?? 0),
    replay: hash.replay ? decodeReplay(hash.replay) : { sent: 0 },
    ...(hash.refusal !== undefined ? { refusal: hash.refusal } : {}),
    ...(hash.forkedFrom !== undefined
      ? { forkedFrom: JSON.parse(hash.forkedFrom) as { runId: string; step: number } }
      : {}),
    ...(hash.retries !== undefined ? { retries: Number(hash.retries) } : {}),
    ...(hash.stepStartedAt !== undefined ? { stepStartedAt: Number(hash.stepStartedAt) } : {}),
    ...(hash.retryAt !== undefined ? { retryAt: Number(hash.retryAt) } : {}),
    ...(hash.trace !== undefined ? { trace: hash.trace } : {}),
    ...(hash.throttledBy !== undefined ? { throttledBy: hash.throttledBy } : {}),
    ...(hash.priority !== undefined ? { priority: Number(hash.priority) } : {}),
    ...(hash.turn !== undefined ? { turn: decodeJson(hash.turn) as unknown as AgentTurn } : {}),
    ...(hash.parentId !== undefined
      ? { parent: { id: hash.parentId, step: Number(hash.parentStep), index: Number(hash.childIndex) } }
      : {}),
    ...streamWriterOf(hash.streamTry),
  };
}

/**
 * The hash fields of a new run (`HSET` pairs, flat): `queued`, or `running` when its maker takes
 * its first step (NewRun.takenBy). Read back by {@link runOfHash}.
 */
export function newRunFields(run: Omit<NewRun, 'id'>): (string | number)[] {
  const fields: (string | number)[] = [
    'flow',
    run.flow,
    'fingerprint',
    run.fingerprint,
    'status',
    run.takenBy === undefined ? 'queued' : 'running',
    'step',
    0,
    'attempt',
    0,
    'checkpoint',
    run.checkpoint,
    'target',
    encodeTarget(run.target),
    'createdAt',
    run.now,
    'updatedAt',
    run.now,
  ];
  if (run.forkedFrom) fields.push('forkedFrom', JSON.stringify(run.forkedFrom));
  if (run.trace !== undefined) fields.push('trace', run.trace);
  if (run.priority !== undefined) fields.push('priority', run.priority);
  if (run.turn !== undefined) fields.push('turn', JSON.stringify(run.turn));
  if (run.takenBy !== undefined) fields.push('startedAt', run.now);
  return fields;
}

/**
 * The latest writer of a run's stream from its `streamTry` field (append-stream.lua: JSON
 * `{ step, tries: [{ t, a, w }], ended }`), as {@link StoredRun.streamWriter}; nothing for none
 * (or the field of an older version, `<step>:<token>:<attempt>`).
 */
function streamWriterOf(field: string | undefined): Pick<StoredRun, 'streamWriter'> {
  if (field === undefined || !field.startsWith('{')) return {};
  const record = decodeJson(field) as { step?: string; tries?: { a: number; w: string }[]; ended?: boolean };
  const latest = Array.isArray(record.tries) ? record.tries.at(-1) : undefined;
  if (!latest) return {};
  return {
    streamWriter: { step: Number(record.step), attempt: latest.a, worker: latest.w, ended: record.ended === true },
  };
}

/** A flat HGETALL-style reply (`[field, value, ...]`) as an object. */
export function hashOfList(flat: string[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
  return hash;
}

/** Where a step started, as scripts compare it: the step counter, ':', the park count (atStep). */
export function positionOf(at: StoredRun): string {
  return `${at.step}:${at.parkCount}`;
}
