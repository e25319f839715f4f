import { QueueflowError } from './queueflow-error.js';

/**
 * An error as plain data, the shape in which errors cross Redis and live on run records.
 */
export interface ErrorRecord {
  name: string;
  message: string;
  code?: string | undefined;
  stack?: string | undefined;
  /** `false` when the error stopped retries (a {@link NonRetryableError} or an engine rule). */
  retryable: boolean;
  /** Id of the node whose step failed, when one did. */
  node?: string | undefined;
  /** 0-based try index of the failed try, when the failure came from `exec`. */
  attempt?: number | undefined;
  /** Epoch milliseconds. */
  at?: number | undefined;
}

/** Why a run failed. */
export interface RunError {
  message: string;
  name?: string;
  code?: string;
  /** Id of the node whose step failed. */
  node?: string;
  /** Tries of `exec` made before the run failed, when `exec` failed. */
  attempts?: number;
}

/** Turns anything thrown into an {@link ErrorRecord}. */
export function toErrorRecord(error: unknown, extra: Partial<ErrorRecord> = {}): ErrorRecord {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const retryable = (error as { retryable?: unknown }).retryable;
    return {
      name: error.name,
      message: error.message,
      code: typeof code === 'string' ? code : undefined,
      stack: error.stack,
      retryable: retryable !== false,
      ...extra,
    };
  }
  return { name: 'Error', message: String(error), retryable: true, ...extra };
}

/** Rebuilds a throwable error from an {@link ErrorRecord}, keeping `code` and the stack. */
export function fromErrorRecord(record: ErrorRecord): Error {
  const error = new QueueflowError(
    (record.code as QueueflowError['code'] | undefined) ?? 'NODE_FAILED',
    record.message,
    { retryable: record.retryable },
  );
  error.name = record.name;
  if (record.stack) error.stack = record.stack;
  return error;
}

/**
 * A run's error (`RunError`) as an {@link ErrorRecord}: how a failed fan-out child's error
 * reaches its parent, on every engine.
 */
export function recordOfRunError(
  error: { name?: string; message: string; code?: string; node?: string; attempts?: number } | undefined,
): ErrorRecord {
  return {
    name: error?.name ?? 'Error',
    message: error?.message ?? 'failed',
    retryable: false,
    ...(error?.code ? { code: error.code } : {}),
    ...(error?.node ? { node: error.node } : {}),
    ...(error?.attempts !== undefined ? { attempt: error.attempts - 1 } : {}),
  };
}

/**
 * The {@link RunError} a run reports for a failure: the record's message, name and code, its node,
 * and the tries made (`attempts`, a count: the failed try's 0-based `attempt` + 1).
 */
export function runErrorOf(error: unknown): RunError {
  const record: ErrorRecord = isErrorRecord(error) ? error : toErrorRecord(error);
  return {
    message: record.message,
    name: record.name,
    ...(record.code ? { code: record.code } : {}),
    ...(record.node ? { node: record.node } : {}),
    ...(record.attempt !== undefined ? { attempts: record.attempt + 1 } : {}),
  };
}

/** The error a fan-out parent fails with when child `index` fails and the policy is fail-fast. */
export function childFailedError(
  request: { kind: 'runs'; flow: string } | { kind: 'items'; node: string },
  index: number,
  record: ErrorRecord | undefined,
): RunError {
  const owner = request.kind === 'runs' ? request.flow : request.node;
  return {
    name: 'QueueflowError',
    code: 'CHILD_FAILED',
    message: `child ${index} of '${owner}' failed: ${record?.message ?? 'it was cancelled'}`,
    ...(record?.node ? { node: record.node } : {}),
    ...(record?.attempt !== undefined ? { attempts: record.attempt + 1 } : {}),
  };
}

/** A failed or cancelled child as `post` sees it under `onItemError: 'collect'`. */
export function itemErrorOf(outcome: { status: 'failed'; error: ErrorRecord } | { status: 'cancelled' }): {
  name: string;
  message: string;
  code?: string;
} {
  if (outcome.status === 'cancelled') return { name: 'QueueflowError', message: 'cancelled', code: 'RUN_CANCELLED' };
  const { name, message, code } = outcome.error;
  return { name, message, ...(code ? { code } : {}) };
}

/**
 * The record of a task that failed for good outside node code (it stalled too often, or kept
 * failing on an infrastructure error): not retryable, with the last try's index when one was made.
 */
export function recordOfFailedTask(
  task: { runId: string; step: number },
  error: Error,
  attemptsMade: number,
  at: number,
): ErrorRecord {
  return {
    name: error.name,
    message: `step ${task.step} of run '${task.runId}' failed outside node code: ${error.message}`,
    retryable: false,
    at,
    ...(attemptsMade > 0 ? { attempt: attemptsMade - 1 } : {}),
  };
}

function isErrorRecord(value: unknown): value is ErrorRecord {
  return (
    typeof value === 'object' &&
    value !== null &&
    !(value instanceof Error) &&
    typeof (value as ErrorRecord).message === 'string' &&
    typeof (value as ErrorRecord).retryable === 'boolean'
  );
}
