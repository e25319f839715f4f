import type { ErrorRecord } from '../errors/error-record.js';
import type { Checkpoint } from './checkpoint.js';
import type { FinalRunStatus, RunError, RunInfo, RunResult, RunStatus } from './engine.js';
import type { ChildOutcome, FanOutRequest } from './fan-out.js';
import type { CompiledGraph } from './graph.js';
import type { MergeConflict } from './merge-patches.js';
import type { StepTarget } from './step-interpreter.js';

/** A LocalEngine parent's fan-out, in memory. */
export interface LocalFanOut {
  request: FanOutRequest;
  /** The parent's `shared` when it fanned out (walks start from it). */
  snapshot: string;
  outcomes: (ChildOutcome | undefined)[];
  childIds: (string | undefined)[];
  started: number;
  ended: number;
  failed: number;
}

/** A LocalEngine run's record, in memory. `checkpoint` is JSON, as the Redis engine stores it. */
export interface LocalRun {
  id: string;
  flow: string;
  graph: CompiledGraph;
  status: RunStatus;
  checkpoint: string;
  target: StepTarget;
  step: number;
  attempt: number;
  cancelRequested: boolean;
  abort: AbortController;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  updatedAt: number;
  lastAction?: string;
  error?: RunError;
  errors: ErrorRecord[];
  conflicts: MergeConflict[];
  /** For a fan-out child: its parent, the parent's step that fanned out, and the child's index. */
  parent?: { id: string; step: number; index: number };
  fanOut?: LocalFanOut;
  waiters: ((result: RunResult) => void)[];
}

export function resultOf(run: LocalRun): RunResult {
  const checkpoint = JSON.parse(run.checkpoint) as Checkpoint;
  return {
    id: run.id,
    status: run.status as FinalRunStatus,
    shared: checkpoint.shared,
    ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
    ...(run.error ? { error: run.error } : {}),
  };
}

export function infoOf(run: LocalRun): RunInfo {
  const checkpoint = JSON.parse(run.checkpoint) as Checkpoint;
  const fanOut = run.fanOut;
  return {
    id: run.id,
    flow: run.flow,
    status: run.status,
    ...(run.target.node === undefined || isFinal(run.status) ? {} : { currentNode: run.target.node }),
    steps: run.step,
    attempts: run.attempt,
    createdAt: run.createdAt,
    ...(run.startedAt === undefined ? {} : { startedAt: run.startedAt }),
    ...(run.finishedAt === undefined ? {} : { finishedAt: run.finishedAt }),
    updatedAt: run.updatedAt,
    ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
    ...(run.error ? { error: run.error } : {}),
    errors: [...run.errors],
    conflicts: [...run.conflicts],
    ...(run.parent ? { parentId: run.parent.id } : {}),
    ...(fanOut ? { children: { total: fanOut.outcomes.length, ended: fanOut.ended, failed: fanOut.failed } } : {}),
    shared: checkpoint.shared,
  };
}

export function isFinal(status: RunStatus): status is FinalRunStatus {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}
