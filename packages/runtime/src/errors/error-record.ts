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
