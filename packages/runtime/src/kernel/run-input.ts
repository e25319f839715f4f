import { QueueflowError } from '../errors/queueflow-error.js';
import { assertJson, type JsonObject } from '../json/json.js';

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
