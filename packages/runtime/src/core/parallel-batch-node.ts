import { toItems } from './batch-node.js';
import { linkedController, mapConcurrent } from './map-concurrent.js';
import { Node, type NodeOptions } from './node.js';
import type { NonIterableObject, ParamsObject } from './types.js';
import { checkOptionalPositiveInteger, invalidOption } from './validate-options.js';

/** Options of the parallel batch classes. */
export interface ParallelOptions {
  /** Most items (or parameter sets) in flight at once. @defaultValue all of them */
  concurrency?: number;
  /**
   * What a failed item does on the engines' fan-out: `'fail-fast'` fails the node at the first
   * item that fails after its retries and fallback; `'collect'` lets the node go on and hands
   * `post` one {@link ItemOutcome} per item. `flow.run` always fails fast.
   * @defaultValue 'fail-fast'
   */
  onItemError?: 'fail-fast' | 'collect';
}

/** What `post` receives per item under `onItemError: 'collect'`. */
export type ItemOutcome<R = unknown> =
  { ok: true; value: R } | { ok: false; error: { name: string; message: string; code?: string | undefined } };

/**
 * A {@link BatchNode} whose items run concurrently: each item runs on its own copy of the node
 * (its own `currentRetry` and `signal`), results keep item order, and the first failure aborts
 * the siblings and fails the node (rule S10).
 *
 * @see PocketFlow `AsyncParallelBatchNode`; PocketFlow PR #148 (per-item retry counter).
 */
export class ParallelBatchNode<S = unknown, P extends ParamsObject = NonIterableObject> extends Node<S, P> {
  static override optionNames: readonly string[] = [...Node.optionNames, 'concurrency', 'onItemError'];

  concurrency: number | undefined;
  onItemError: 'fail-fast' | 'collect';

  constructor(maxRetries?: number, wait?: number);
  constructor(options?: NodeOptions & ParallelOptions);
  constructor(maxRetriesOrOptions?: number | (NodeOptions & ParallelOptions), wait?: number) {
    super(maxRetriesOrOptions as number, wait);
    const options = typeof maxRetriesOrOptions === 'object' && maxRetriesOrOptions !== null ? maxRetriesOrOptions : {};
    this.concurrency = checkOptionalPositiveInteger(new.target.name, 'concurrency', options.concurrency);
    this.onItemError = checkItemErrorPolicy(new.target.name, options.onItemError);
  }

  override async _exec(items: unknown, abort?: AbortSignal): Promise<unknown[]> {
    const list = toItems(this, items);
    const controller = linkedController(abort);
    return await mapConcurrent(list, this.concurrency, controller, (item) =>
      // A per-item copy: `currentRetry` and `signal` belong to the item (PocketFlow PR #148).
      (Object.create(this) as this)._execWithRetries(item, controller.signal),
    );
  }
}

export function checkItemErrorPolicy(owner: string, value: unknown): 'fail-fast' | 'collect' {
  if (value === undefined || value === 'fail-fast' || value === 'collect') return value ?? 'fail-fast';
  throw invalidOption(owner, 'onItemError', "'fail-fast' or 'collect'", value);
}
