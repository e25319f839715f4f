import type { BaseNode } from '../core/base-node.js';

/**
 * What an engine gives node code during a step: the run's identity (and, with mailboxes, the
 * way to send and receive). Attached to the per-visit copy, never to the template.
 */
export interface NodeRuntime {
  /** Id of the run the step belongs to. */
  readonly runId: string;
  /** Name of the registered flow. */
  readonly flowName: string;
}

const RUNTIME = Symbol.for('queueflow.runtime');

/** Attaches `runtime` to a per-visit copy. */
export function attachRuntime(node: BaseNode<any, any>, runtime: NodeRuntime): void {
  (node as unknown as Record<symbol, NodeRuntime>)[RUNTIME] = runtime;
}

/** The runtime attached to `node`, if an engine runs it. */
export function runtimeOf(node: BaseNode<any, any>): NodeRuntime | undefined {
  return (node as unknown as Record<symbol, NodeRuntime | undefined>)[RUNTIME];
}
