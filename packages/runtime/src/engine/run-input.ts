import { toErrorRecord, type ErrorRecord } from '../errors/error-record.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Checkpoint } from './checkpoint.js';
import type { RunError } from './engine.js';
import { assertJson, type JsonObject } from './json.js';

/**
 * Checks a new run's `shared` and params before anything is written: plain objects that survive
 * JSON. Returns both, typed as JSON (params `{}` when none).
 *
 * @throws QueueflowError `NOT_JSON` naming the path, e.g. `shared.client is a function`.
 */
export function checkRunInput(shared: unknown, params: unknown): { shared: JsonObject; params: JsonObject } {
  if (shared === null || typeof shared !== 'object' || Array.isArray(shared)) {
    throw new QueueflowError(
      'NOT_JSON',
      `shared must be a plain object, got ${Array.isArray(shared) ? 'an array' : String(shared)}`,
      {
        retryable: false,
      },
    );
  }
  assertJson(shared, 'shared');
  if (params === undefined) return { shared: shared as JsonObject, params: {} };
  if (params === null || typeof params !== 'object' || Array.isArray(params)) {
    throw new QueueflowError(
      'NOT_JSON',
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- only null or a primitive gets here
      `params must be a plain object, got ${Array.isArray(params) ? 'an array' : String(params)}`,
      {
        retryable: false,
      },
    );
  }
  assertJson(params, 'params');
  return { shared: shared as JsonObject, params: params as JsonObject };
}

/**
 * Serializes a checkpoint, refusing one over `maxBytes`.
 *
 * @throws QueueflowError `PAYLOAD_TOO_LARGE` naming the size and the limit.
 */
export function encodeCheckpoint(checkpoint: Checkpoint, maxBytes: number): string {
  const encoded = JSON.stringify(checkpoint);
  const bytes = Buffer.byteLength(encoded);
  if (bytes > maxBytes) {
    throw new QueueflowError(
      'PAYLOAD_TOO_LARGE',
      `the run's checkpoint (shared, params and step state) is ${bytes} bytes, over the limit of ${maxBytes} bytes (maxCheckpointBytes)`,
      { retryable: false },
    );
  }
  return encoded;
}

/** The {@link RunError} a run reports for a failure: an {@link ErrorRecord} or anything thrown. */
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

function isErrorRecord(value: unknown): value is ErrorRecord {
  return (
    typeof value === 'object' &&
    value !== null &&
    !(value instanceof Error) &&
    typeof (value as ErrorRecord).message === 'string' &&
    typeof (value as ErrorRecord).retryable === 'boolean'
  );
}
