import type { Json, JsonObject } from '../json/json.js';

/**
 * Where a walk stands, one frame per flow level (the run itself at the bottom).
 *
 * - `run`: the run's root node; its successors are not followed (the root is the run).
 * - `flow`: the walk of a nested Flow, between its `prep` and its `post`.
 * - `batch`: the walks of a BatchFlow, one per
 *   param set in `prepRes`, the current one at `batchIndex`.
 * - `fan-out`: a ParallelBatchFlow waiting for its child runs; resumed by the engine.
 * - `child`: the bottom frame of a fan-out child run: one param set's walk, without the parent
 *   flow's `prep`/`post`.
 */
export type FrameKind = 'run' | 'flow' | 'batch' | 'fan-out' | 'child';

export interface Frame {
  kind: FrameKind;
  /** Id of the flow whose walk this frame is (the root's id for `run`). */
  flow: string;
  /** Params of the flow at this level, as its parent gave them. */
  params: JsonObject;
  /** The flow's `prep` result; for batch flows the list of param sets. */
  prepRes?: Json;
  /** Batch flows: index of the running param set. */
  batchIndex?: number;
  /** Node to visit next; absent once the walk has ended. */
  node?: string;
  /** Last action of the walk so far. */
  lastAction?: string;
  /** The visit of `node` once its `prep` has run (retries and batches resume from here). */
  visit?: Visit;
}

export interface Visit {
  prepRes?: Json;
  /** BatchNode: results of the items done so far, in item order. */
  results?: Json[];
  /** ParallelBatchNode on an engine: items are out as child tasks. */
  fannedOut?: boolean;
  /**
   * Shared-memory updates staged by `prep` and by the tries of `exec` that succeeded, kept while
   * a try is retried (they are written when the visit's step commits; see StepMailboxPort).
   */
  memory?: Json;
}

/**
 * A run's persisted state: everything a worker needs to take the next step anywhere.
 * Survives JSON; engines store it whole.
 */
export interface Checkpoint {
  shared: JsonObject;
  /** Bottom (the run) first; empty once the run has ended. */
  frames: Frame[];
  /** The root's final action, once the run has completed. */
  lastAction?: string;
}
