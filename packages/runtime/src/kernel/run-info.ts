import { DEFAULT_QUEUE } from '../core/queue-name.js';
import type { StepTarget } from '../interpreter/step-types.js';
import type { JsonObject } from '../json/json.js';
import type { FinalRunStatus, RunInfo, RunResult, RunSummary } from './engine.js';
import { isFinal, type RunRecord, type StoredRun } from './run-store.js';

/**
 * How a stored run is shown: the one place that shapes {@link RunSummary}, {@link RunInfo} and
 * {@link RunResult} from a store's record, for every engine.
 */

/** The run as `list` shows it: no `shared`, no history (so listing reads no checkpoint). */
export function runSummaryOf(run: StoredRun): RunSummary {
  return {
    id: run.id,
    flow: run.flow,
    status: run.status,
    ...(run.target.node !== undefined && !isFinal(run.status) ? { currentNode: run.target.node } : {}),
    steps: run.step,
    attempts: run.attempt,
    createdAt: run.createdAt,
    ...(run.startedAt !== undefined ? { startedAt: run.startedAt } : {}),
    ...(run.finishedAt !== undefined ? { finishedAt: run.finishedAt } : {}),
    updatedAt: run.updatedAt,
    ...(run.lastAction !== undefined ? { lastAction: run.lastAction } : {}),
    ...(run.error ? { error: run.error } : {}),
    ...(run.parent ? { parentId: run.parent.id } : {}),
    ...(run.refusal !== undefined && !isFinal(run.status) ? { refusal: run.refusal } : {}),
    ...(run.forkedFrom ? { forkedFrom: { ...run.forkedFrom } } : {}),
    ...(run.retries ? { retries: run.retries } : {}),
    ...(run.status === 'throttled' && run.throttledBy !== undefined ? { throttledBy: run.throttledBy } : {}),
    ...(run.priority === undefined ? {} : { priority: run.priority }),
    ...(run.turn ? { agent: { ref: run.turn.agent, turn: run.turn.turn, messageId: run.turn.message.id } } : {}),
    ...(run.status === 'queued' || run.status === 'running' ? { queue: queueOf(run.target) } : {}),
  };
}

/** The queue whose workers run a step with `target`. */
export function queueOf(target: StepTarget): string {
  return target.queue ?? DEFAULT_QUEUE;
}

/** The run as `get` shows it. `shared` is its last committed shared store. */
export function runInfoOf(record: RunRecord, shared: JsonObject): RunInfo {
  const { run } = record;
  return {
    ...runSummaryOf(run),
    errors: record.errors,
    conflicts: record.conflicts,
    ...(run.status === 'waiting' && record.children ? { children: record.children } : {}),
    shared,
  };
}

/** How an ended run ended. */
export function runResultOf(run: StoredRun & { status: FinalRunStatus }, shared: JsonObject): RunResult {
  return {
    id: run.id,
    status: run.status,
    shared,
    ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
    ...(run.error ? { error: run.error } : {}),
  };
}
