import type { FanOutRequest, StepTarget } from '../interpreter/step-types.js';

/**
 * The target of the items of a ParallelBatchNode fan-out: the node, its tries, its queue (items
 * run where the node's steps run).
 */
export function itemTarget(request: Extract<FanOutRequest, { kind: 'items' }>): StepTarget {
  return {
    node: request.node,
    maxAttempts: request.maxAttempts,
    ...(request.queue === undefined ? {} : { queue: request.queue }),
  };
}

/**
 * The target of a fan-in step (the parent resumes with `post` once its last child has ended): one
 * try, on the queue of the node that fanned out (a ParallelBatchNode's `post` runs where its
 * items ran); a ParallelBatchFlow's fan-in runs on the default queue. Also the target a waiting
 * parent holds.
 */
export function fanInTarget(request: FanOutRequest | undefined): StepTarget {
  if (request?.kind !== 'items' || request.queue === undefined) return { node: undefined, maxAttempts: 1 };
  return { node: undefined, maxAttempts: 1, queue: request.queue };
}
