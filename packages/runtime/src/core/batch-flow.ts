import { Flow } from './flow.js';
import type { Action, NonIterableObject, ParamsObject } from './types.js';

/**
 * A Flow whose `prep` returns a list of param objects (`null`/`undefined`: none); the walk runs
 * once per object, in order, with params `{ ...flow.params, ...object }`; then
 * `post(shared, list, undefined)`, which by default returns `undefined`, so a parent continues
 * on `"default"` (rule S9).
 *
 * @see PocketFlow `BatchFlow`.
 */
export class BatchFlow<S = unknown, P extends ParamsObject = NonIterableObject> extends Flow<S, P> {
  override async _run(shared: S, abort?: AbortSignal): Promise<Action | undefined> {
    const list = toParamList(this, await this.prep(shared));
    for (const item of list) {
      await this._orchestrate(shared, { ...this._params, ...item } as P, abort);
    }
    abort?.throwIfAborted();
    return (await this.post(shared, list, undefined)) ?? undefined;
  }
}

/** `prep`'s result as a param list: `null`/`undefined` → `[]`; each entry a plain object. */
export function toParamList(owner: object, list: unknown): NonIterableObject[] {
  if (list === null || list === undefined) return [];
  if (!Array.isArray(list)) {
    throw new TypeError(
      `${owner.constructor.name}: prep must return an array of param objects (or null/undefined for none), got ${typeof list}`,
    );
  }
  list.forEach((entry, index) => {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new TypeError(
        `${owner.constructor.name}: prep must return param objects, got ${Array.isArray(entry) ? 'an array' : typeof entry} at index ${index}`,
      );
    }
  });
  return list as NonIterableObject[];
}
