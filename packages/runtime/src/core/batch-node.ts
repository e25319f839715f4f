import { Node } from './node.js';
import type { NonIterableObject, ParamsObject } from './types.js';

/**
 * A node whose `prep` returns items; `exec` runs once per item under the retry policy, and
 * `post` receives the results in item order. `null`/`undefined` items mean an empty batch. An
 * item that still fails after its fallback fails the node: later items do not run and `post` is
 * not called (rule S8).
 *
 * @see PocketFlow `BatchNode`.
 */
export class BatchNode<S = unknown, P extends ParamsObject = NonIterableObject> extends Node<S, P> {
  override async _exec(items: unknown, abort?: AbortSignal): Promise<unknown[]> {
    const list = toItems(this, items);
    const results: unknown[] = [];
    for (const item of list) results.push(await this._execWithRetries(item, abort));
    return results;
  }
}

/** `prep`'s result as a batch: `null`/`undefined` → `[]`; anything but an array is an error. */
export function toItems(owner: object, items: unknown): unknown[] {
  if (items === null || items === undefined) return [];
  if (!Array.isArray(items)) {
    throw new TypeError(
      `${owner.constructor.name}: prep must return an array of items (or null/undefined for none), got ${typeof items}`,
    );
  }
  return items;
}
