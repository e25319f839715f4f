/**
 * Stable error codes. Check errors by `code`, which survives crossing processes as plain data,
 * not by `instanceof`, which does not.
 */
export type QueueflowErrorCode =
  | 'INVALID_OPTION'
  | 'INVALID_ARGUMENT'
  | 'NOT_JSON'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNKNOWN_FLOW'
  | 'GRAPH_MISMATCH'
  | 'NODE_FAILED'
  | 'NODE_TIMEOUT'
  | 'NON_RETRYABLE'
  | 'RUN_CANCELLED'
  | 'RUN_NOT_FOUND'
  | 'MAILBOX_TIMEOUT'
  | 'ENGINE_CLOSED'
  | 'REDIS_UNAVAILABLE'
  | 'CHILD_FAILED'
  | 'RUN_NOT_RETRYABLE'
  | 'MESSAGE_NOT_FOUND'
  | 'RESULT_TIMEOUT'
  | 'REDIS_TIMEOUT'
  | 'CORRUPT_RUN'
  | 'RATE_LIMITED'
  | 'WORKER_FENCED'
  | 'MAILBOX_FULL'
  | 'MEMORY_CONFLICT'
  | 'ASK_CYCLE'
  | 'CONVERSATION_BUDGET'
  | 'INTERNAL';

/**
 * Base class of every error queueflow throws on purpose.
 *
 * @see langgraphjs `BaseLangGraphError`, Temporal `ApplicationFailure`: one base class with a
 *   stable `code` and an ES2022 `cause`.
 */
export class QueueflowError extends Error {
  readonly code: QueueflowErrorCode;
  /** `false` stops retries of the step that threw it, on every engine. */
  readonly retryable: boolean;

  constructor(code: QueueflowErrorCode, message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? true;
  }
}

/**
 * Throw from `exec` to skip the remaining tries: `execFallback` runs at once with this error.
 *
 * @see Temporal `ApplicationFailure.nonRetryable`, BullMQ `UnrecoverableError`.
 * @example
 * ```ts
 * if (response.status === 400) throw new NonRetryableError('bad request: retrying will not help');
 * ```
 */
export class NonRetryableError extends QueueflowError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('NON_RETRYABLE', message, { ...options, retryable: false });
  }
}

/**
 * Throw from `exec` when the provider says "too many requests" (HTTP 429 with `Retry-After`): the
 * step waits `retryAfterMs` and runs again **without using up a try**, and every key of the node's
 * `limits` is held back for everyone (all workers) until then. On `flow.run` (no engine) the try
 * sleeps `retryAfterMs` and runs again, also without using up a try. The wait is at least
 * {@link MIN_RATE_LIMITED_WAIT_MS} (100 ms): a provider that answers `Retry-After: 0` to every
 * request is asked again ten times a second, not in a busy loop.
 *
 * @throws TypeError when `retryAfterMs` is not a finite number of milliseconds ≥ 0.
 * @example
 * ```ts
 * if (response.status === 429)
 *   throw new RateLimitedError('model quota', { retryAfterMs: Number(response.headers.get('retry-after')) * 1000 });
 * ```
 */
export class RateLimitedError extends QueueflowError {
  /** How long the step (and the node's budget keys) wait, in **milliseconds**. */
  readonly retryAfterMs: number;

  constructor(message: string, options: { retryAfterMs: number; cause?: unknown }) {
    const { retryAfterMs } = options;
    if (typeof retryAfterMs !== 'number' || !Number.isFinite(retryAfterMs) || retryAfterMs < 0) {
      throw new TypeError(
        `RateLimitedError: expected \`retryAfterMs\` to be a finite number of milliseconds from 0 and up, got \`${String(retryAfterMs)}\` (${typeof retryAfterMs})`,
      );
    }
    super('RATE_LIMITED', message, options.cause === undefined ? {} : { cause: options.cause });
    this.retryAfterMs = retryAfterMs;
  }
}

/** The shortest wait after a {@link RateLimitedError}, in ms, whatever `retryAfterMs` it asked for. */
export const MIN_RATE_LIMITED_WAIT_MS = 100;

/**
 * The wait a {@link RateLimitedError} asks for, in ms, when `error` is one (checked by `code`):
 * its `retryAfterMs`, at least {@link MIN_RATE_LIMITED_WAIT_MS}.
 */
export function retryAfterOf(error: unknown): number | undefined {
  if ((error as { code?: unknown } | null)?.code !== 'RATE_LIMITED') return undefined;
  const ms = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return Math.max(MIN_RATE_LIMITED_WAIT_MS, typeof ms === 'number' && Number.isFinite(ms) ? ms : 0);
}

/** `exec` took longer than the node's `timeoutMs`; counts as a failed try. */
export class NodeTimeoutError extends QueueflowError {
  constructor(nodeName: string, timeoutMs: number) {
    super('NODE_TIMEOUT', `${nodeName}: exec timed out after ${timeoutMs} ms (timeoutMs)`);
  }
}

/**
 * A call got an argument it cannot take (a mailbox address with spaces, a negative `timeoutMs`):
 * a `TypeError`, as JavaScript's own checks throw, that carries the code `INVALID_ARGUMENT` and
 * is not retryable, so a run it ends records that code like any {@link QueueflowError}'s.
 */
export class InvalidArgumentError extends TypeError {
  readonly code = 'INVALID_ARGUMENT' satisfies QueueflowErrorCode;
  /** Trying again with the same argument cannot help. */
  readonly retryable = false;
}
