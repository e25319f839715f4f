import type { RunError, RunStatus } from '@queueflow/runtime';
import type { StepReplay, StepTarget } from '@queueflow/runtime/interpreter';

/** A run's record as stored in its Redis hash. */
export interface StoredRun {
  id: string;
  flow: string;
  fingerprint: string;
  status: RunStatus;
  step: number;
  /** Failed tries of the current step. */
  attempt: number;
  /** JSON; a fan-out child's first checkpoint has no `shared` (it starts from the snapshot). */
  checkpoint: string;
  target: StepTarget;
  createdAt: number;
  startedAt?: number;
  updatedAt: number;
  finishedAt?: number;
  lastAction?: string;
  error?: RunError;
  cancel: boolean;
  parent?: { id: string; step: number; index: number };
  /** Times the run has parked on a mailbox (wake jobs are `<id>-<step>-p<parkCount>`). */
  parkCount: number;
  /** The current step's park and delivered sends, when it parked (see StepReplay). */
  replay: StepReplay;
  /** Why a worker last gave the current step back (see RunInfo.refusal). */
  refusal?: string;
}

/** Where a step started: its step counter and the run's park count then (see atStep in Lua). */
export interface StepPosition {
  step: number;
  parkCount: number;
}

export function position(at: StepPosition): string {
  return `${at.step}:${at.parkCount}`;
}

export function isFinal(status: RunStatus | undefined): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

export function parseRun(id: string, hash: Record<string, string>): StoredRun {
  const number = (field: string): number | undefined => (hash[field] === undefined ? undefined : Number(hash[field]));
  return {
    id,
    flow: hash.flow ?? '',
    fingerprint: hash.fingerprint ?? '',
    status: hash.status as RunStatus,
    step: number('step') ?? 0,
    attempt: number('attempt') ?? 0,
    checkpoint: hash.checkpoint ?? '{"shared":{},"frames":[]}',
    target: hash.target ? (JSON.parse(hash.target) as StepTarget) : { node: undefined, maxAttempts: 1 },
    createdAt: number('createdAt') ?? 0,
    ...(hash.startedAt !== undefined ? { startedAt: Number(hash.startedAt) } : {}),
    updatedAt: number('updatedAt') ?? 0,
    ...(hash.finishedAt !== undefined ? { finishedAt: Number(hash.finishedAt) } : {}),
    ...(hash.lastAction !== undefined ? { lastAction: hash.lastAction } : {}),
    ...(hash.error ? { error: JSON.parse(hash.error) as RunError } : {}),
    cancel: hash.cancel === '1',
    parkCount: Number(hash.parkCount ?? 0),
    replay: hash.replay ? (JSON.parse(hash.replay) as StepReplay) : { sent: 0 },
    ...(hash.refusal !== undefined ? { refusal: hash.refusal } : {}),
    ...(hash.parentId !== undefined
      ? { parent: { id: hash.parentId, step: Number(hash.parentStep), index: Number(hash.childIndex) } }
      : {}),
  };
}
