import { BatchFlow, toParamList } from './batch-flow.js';
import type { BaseNode } from './base-node.js';
import type { FlowOptions } from './flow.js';
import { linkedController, mapConcurrent } from './map-concurrent.js';
import { checkItemErrorPolicy, type ParallelOptions } from './parallel-batch-node.js';
import type { Action, NonIterableObject, ParamsObject } from './types.js';
import { checkOptionalPositiveInteger } from './validate-options.js';

/**
 * A {@link BatchFlow} whose walks run concurrently, at most `concurrency` at once. With
 * `flow.run` they share one `shared` object, as in PocketFlow; on the engines each walk starts
 * from a snapshot and its changes merge back in parameter-set order. The first failure fails the
 * flow; siblings stop at their next step boundary and write nothing after it (rule S10).
 *
 * @see PocketFlow `AsyncParallelBatchFlow`.
 */
export class ParallelBatchFlow<S = unknown, P extends ParamsObject = NonIterableObject> extends BatchFlow<S, P> {
  static override optionNames: readonly string[] = ['name', 'concurrency', 'onItemError'];
  concurrency: number | undefined;
  onItemError: 'fail-fast' | 'collect';

  /** @param start - as for {@link Flow}: its types are the flow's when no type arguments are given. */
  constructor(start: BaseNode<S, P> | BaseNode<any, any>, options: FlowOptions & ParallelOptions = {}) {
    super(start, options);
    this.concurrency = checkOptionalPositiveInteger(new.target.name, 'concurrency', options.concurrency);
    this.onItemError = checkItemErrorPolicy(new.target.name, options.onItemError);
  }

  override async _run(shared: S, abort?: AbortSignal): Promise<Action | undefined> {
    const list = toParamList(this, await this.prep(shared));
    const controller = linkedController(abort);
    await mapConcurrent(list, this.concurrency, controller, (item) =>
      this._orchestrate(shared, { ...this._params, ...item } as P, controller.signal),
    );
    abort?.throwIfAborted();
    return (await this.post(shared, list, undefined)) ?? undefined;
  }
}
