import { NonRetryableError } from '@queueflow/runtime';
import type { DocumentFailure, FailureCode, StageName } from './types.js';

const FAILURE_CODES: readonly FailureCode[] = [
  'EMPTY',
  'BINARY',
  'TOO_LARGE',
  'TRUNCATED',
  'MALFORMED',
  'NO_TEXT',
  'UNREADABLE',
  'ERROR',
];

/**
 * A document the pipeline cannot process: retrying will not help, so it skips the remaining
 * tries and goes straight to the node's `execFallback`, which turns it into a failure record.
 *
 * The message starts with the failure code (`EMPTY: the file has 0 bytes`), so the code
 * survives even where only `{ name, message }` crosses a process boundary.
 */
export class DocumentError extends NonRetryableError {
  readonly failureCode: FailureCode;

  constructor(failureCode: FailureCode, reason: string, options: { cause?: unknown } = {}) {
    super(`${failureCode}: ${reason}`, options);
    this.name = 'DocumentError';
    this.failureCode = failureCode;
  }
}

/** Turns anything a stage threw into a {@link DocumentFailure}. */
export function toFailure(stage: StageName, error: unknown): DocumentFailure {
  const message = error instanceof Error ? error.message : String(error);
  const prefixed = /^([A-Z_]+): ([\s\S]*)$/.exec(message);
  if (prefixed && FAILURE_CODES.includes(prefixed[1] as FailureCode)) {
    return { stage, code: prefixed[1] as FailureCode, reason: oneLine(prefixed[2] ?? '') };
  }
  const name = error instanceof Error ? error.name : 'Error';
  return { stage, code: 'ERROR', reason: oneLine(`${name}: ${message}`) };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
