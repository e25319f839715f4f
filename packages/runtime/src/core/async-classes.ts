/**
 * The Python reference's Async names (rule S12). Every lifecycle method here may already
 * return a value or a Promise, so these classes add only `runAsync`, the Python spelling of
 * `run`.
 *
 * @see PocketFlow (Python) `AsyncNode`, `AsyncBatchNode`, `AsyncParallelBatchNode`,
 *   `AsyncFlow`, `AsyncBatchFlow`, `AsyncParallelBatchFlow`.
 */
import { BatchFlow } from './batch-flow.js';
import { BatchNode } from './batch-node.js';
import { Flow } from './flow.js';
import { Node } from './node.js';
import { ParallelBatchFlow } from './parallel-batch-flow.js';
import { ParallelBatchNode } from './parallel-batch-node.js';
import type { Action, NonIterableObject, ParamsObject } from './types.js';

export class AsyncNode<S = unknown, P extends ParamsObject = NonIterableObject> extends Node<S, P> {
  /** Same as `run` (Python: `run_async`). */
  runAsync(shared: S): Promise<Action | undefined> {
    return this.run(shared);
  }
}

export class AsyncBatchNode<S = unknown, P extends ParamsObject = NonIterableObject> extends BatchNode<S, P> {
  /** Same as `run` (Python: `run_async`). */
  runAsync(shared: S): Promise<Action | undefined> {
    return this.run(shared);
  }
}

export class AsyncParallelBatchNode<S = unknown, P extends ParamsObject = NonIterableObject> extends ParallelBatchNode<
  S,
  P
> {
  /** Same as `run` (Python: `run_async`). */
  runAsync(shared: S): Promise<Action | undefined> {
    return this.run(shared);
  }
}

export class AsyncFlow<S = unknown, P extends ParamsObject = NonIterableObject> extends Flow<S, P> {
  /** Same as `run` (Python: `run_async`). */
  runAsync(shared: S): Promise<Action | undefined> {
    return this.run(shared);
  }
}

export class AsyncBatchFlow<S = unknown, P extends ParamsObject = NonIterableObject> extends BatchFlow<S, P> {
  /** Same as `run` (Python: `run_async`). */
  runAsync(shared: S): Promise<Action | undefined> {
    return this.run(shared);
  }
}

export class AsyncParallelBatchFlow<S = unknown, P extends ParamsObject = NonIterableObject> extends ParallelBatchFlow<
  S,
  P
> {
  /** Same as `run` (Python: `run_async`). */
  runAsync(shared: S): Promise<Action | undefined> {
    return this.run(shared);
  }
}
