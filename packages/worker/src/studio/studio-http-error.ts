/**
 * The studio API's errors: each has an HTTP status and a stable `code`, and goes out as
 * `{ "error": { "code", "message" } }`.
 */
export type StudioErrorCode =
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'READ_ONLY'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'NOT_IMPLEMENTED'
  | 'UNAVAILABLE'
  | 'INTERNAL'
  /** A cancel of a run that has already ended (409). */
  | 'RUN_ENDED'
  /** No such agent key (404). */
  | 'AGENT_NOT_FOUND'
  /** No such conversation (404): never started, or expired. */
  | 'CONVERSATION_NOT_FOUND'
  // engine codes passed through as they are
  | 'RUN_NOT_FOUND'
  | 'MESSAGE_NOT_FOUND'
  | 'RUN_NOT_RETRYABLE'
  | 'INVALID_OPTION'
  | 'NOT_JSON'
  | 'UNKNOWN_FLOW';

/** An error the studio answers with: HTTP `status`, stable `code`, and a message for people. */
export class StudioHttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: StudioErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'StudioHttpError';
  }
}

/** The HTTP status of each engine error code the studio passes through. */
const ENGINE_CODES: Record<string, [number, StudioErrorCode]> = {
  RUN_NOT_FOUND: [404, 'RUN_NOT_FOUND'],
  MESSAGE_NOT_FOUND: [404, 'MESSAGE_NOT_FOUND'],
  UNKNOWN_FLOW: [404, 'UNKNOWN_FLOW'],
  RUN_NOT_RETRYABLE: [409, 'RUN_NOT_RETRYABLE'],
  INVALID_OPTION: [400, 'INVALID_OPTION'],
  NOT_JSON: [400, 'NOT_JSON'],
  PAYLOAD_TOO_LARGE: [413, 'PAYLOAD_TOO_LARGE'],
  REDIS_UNAVAILABLE: [503, 'UNAVAILABLE'],
  ENGINE_CLOSED: [503, 'UNAVAILABLE'],
};

/**
 * Anything thrown while answering a request, as a {@link StudioHttpError}: engine errors by their
 * `code` (checked by code, not class: they may come from another copy of the runtime), anything
 * else as a 500 whose message is kept (the studio is an operator's tool, not a public site).
 */
export function toStudioHttpError(error: unknown): StudioHttpError {
  if (error instanceof StudioHttpError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (typeof code === 'string' && code in ENGINE_CODES) {
    const [status, studioCode] = ENGINE_CODES[code]!;
    return new StudioHttpError(status, studioCode, message);
  }
  return new StudioHttpError(500, 'INTERNAL', message);
}
