import { QueueflowError, type QueueflowErrorCode } from './queueflow-error.js';

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
  /**
   * A stable code: a {@link QueueflowError}'s (`NOT_JSON`, `NODE_TIMEOUT`, `CHILD_FAILED`, …), the
   * code of the error node code threw when it had a string `code` of its own, else `NODE_FAILED`.
   * Always set on the error of a failed run; optional in the type only for errors stored by
   * earlier versions.
   */
  code?: string;
  /** Id of the node whose step failed. */
  node?: string;
  /** Tries of `exec` made before the run failed, when `exec` failed. */
  attempts?: number;
}

/**
 * The longest `message` an {@link ErrorRecord} keeps, in characters (UTF-16 code units); the rest
 * is cut and said to be cut. An error's text lands on the run record, in the error history, in
 * logs, the CLI and the studio: a node that throws a 5 MB message must not make each of them 5 MB.
 */
export const MAX_ERROR_MESSAGE_CHARS = 4_096;

/** The longest `stack` an {@link ErrorRecord} keeps, in characters (see {@link MAX_ERROR_MESSAGE_CHARS}). */
export const MAX_ERROR_STACK_CHARS = 16_384;

/**
 * Turns anything thrown into an {@link ErrorRecord}. Its `code` is the error's own when that is a
 * non-empty string (every {@link QueueflowError} has one), else `NODE_FAILED`: an error that ends a
 * run always carries a code. Something thrown that is not an `Error` keeps what it says: an
 * object's own `message`, `name` and `code` when they are strings, else its JSON. The message and
 * the stack are cut to {@link MAX_ERROR_MESSAGE_CHARS} and {@link MAX_ERROR_STACK_CHARS}.
 */
export function toErrorRecord(error: unknown, extra: Partial<ErrorRecord> = {}): ErrorRecord {
  if (error instanceof Error) {
    const retryable = (error as { retryable?: unknown }).retryable;
    return {
      name: error.name,
      message: cut(error.message, MAX_ERROR_MESSAGE_CHARS),
      code: codeOf(error),
      stack: error.stack === undefined ? undefined : cut(error.stack, MAX_ERROR_STACK_CHARS),
      retryable: retryable !== false,
      ...extra,
    };
  }
  const fields = typeof error === 'object' && error !== null ? (error as Record<string, unknown>) : {};
  const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  return {
    name: text(fields.name) ?? 'Error',
    message: cut(text(fields.message) ?? describe(error), MAX_ERROR_MESSAGE_CHARS),
    code: text(fields.code) ?? DEFAULT_CODE,
    retryable: fields.retryable !== false,
    ...extra,
  };
}

/** What a thrown non-`Error` says: a string as it is, an object as JSON, anything else by `String`. */
function describe(thrown: unknown): string {
  if (typeof thrown === 'string') return thrown;
  if (typeof thrown === 'object' && thrown !== null) {
    try {
      const json = JSON.stringify(thrown);
      if (json !== undefined && json !== '{}') return json;
    } catch {
      // a cycle or a BigInt: String() below
    }
  }
  return String(thrown);
}

/** `text` cut to `max` characters, saying how many were cut. */
function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters cut)`;
}

/** The code of an error thrown without one. */
const DEFAULT_CODE: QueueflowErrorCode = 'NODE_FAILED';

function codeOf(error: Error, fallback: string = DEFAULT_CODE): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code !== '' ? code : fallback;
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
    code: error?.code || DEFAULT_CODE,
    ...(error?.node ? { node: error.node } : {}),
    ...(error?.attempts !== undefined ? { attempt: error.attempts - 1 } : {}),
  };
}

/**
 * The {@link RunError} a run reports for a failure: the record's message, name and code
 * (`NODE_FAILED` when it has none), its node, and the tries made (`attempts`, a count: the failed
 * try's 0-based `attempt` + 1).
 */
export function runErrorOf(error: unknown): RunError {
  const record: ErrorRecord = isErrorRecord(error) ? error : toErrorRecord(error);
  return {
    message: record.message,
    name: record.name,
    code: record.code || DEFAULT_CODE,
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

/**
 * The error of a run that no step can resume from (a corrupted or hand-edited record, or a bug):
 * not retryable, since trying again cannot mend a record.
 *
 * @param run - the run's id and flow name, when known.
 * @param problem - what is wrong, e.g. `its checkpoint is not JSON (...)`.
 */
export function corruptRunError(
  run: { id?: string | undefined; flow: string } | undefined,
  problem: string,
): QueueflowError {
  const which = run ? `run${run.id === undefined ? '' : ` '${run.id}'`} of flow '${run.flow}'` : 'a run';
  return new QueueflowError('CORRUPT_RUN', `${which} cannot go on: ${problem}`, { retryable: false });
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
 * failing on an infrastructure error): not retryable, with the last try's index when one was made,
 * and the error's own code (e.g. `REDIS_TIMEOUT`), else `INTERNAL`.
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
    code: codeOf(error, 'INTERNAL'),
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
