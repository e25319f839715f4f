import { BaseNode } from '../core/base-node.js';
import { warn } from '../core/warnings.js';
import type { Checkpoint, Frame } from './checkpoint.js';
import { graphNode, isLeaf, type CompiledGraph } from './graph.js';
import type { JsonObject } from '../json/json.js';
import type { StepTarget } from './step-types.js';

/**
 * Moving through a checkpoint's frames without running user code: where a run starts, what its
 * next step targets, which params a frame's walk gives its nodes, and the successor of a node.
 */

/**
 * The checkpoint of a new run: at the root, nothing run yet.
 *
 * @param params - the run's params (the root's params, rule S6).
 */
export function initialCheckpoint(
  graph: CompiledGraph,
  shared: JsonObject,
  params: JsonObject,
): {
  checkpoint: Checkpoint;
  target: StepTarget;
} {
  const root = graphNode(graph, graph.rootId);
  if (isLeaf(root.kind) && root.successors.size > 0) {
    warn('QF_NODE_WONT_RUN_SUCCESSORS', "Node won't run successors. Use Flow.");
  }
  const checkpoint: Checkpoint = { shared, frames: [{ kind: 'run', flow: root.id, params, node: root.id }] };
  enterPlainFlows(graph, checkpoint);
  return { checkpoint, target: targetOf(checkpoint, graph) };
}

/**
 * Enters, without a step, the flows at the top of the walk whose `prep` is the default one (it
 * runs no user code and returns nothing): a run of `new Flow(start)` then starts at `start`,
 * and its first step is a node visit.
 */
export function enterPlainFlows(graph: CompiledGraph, checkpoint: Checkpoint): void {
  for (;;) {
    const top = checkpoint.frames[checkpoint.frames.length - 1];
    if (top?.node === undefined) return;
    const node = graphNode(graph, top.node);
    if (node.kind !== 'flow' || node.template.prep !== BaseNode.prototype.prep) return;
    checkpoint.frames.push({ kind: 'flow', flow: node.id, params: walkParams(top), node: node.start! });
  }
}

/** What the next step of `checkpoint` targets. */
export function targetOf(checkpoint: Checkpoint, graph: CompiledGraph): StepTarget {
  const top = checkpoint.frames[checkpoint.frames.length - 1];
  if (top?.node === undefined) return { node: undefined, maxAttempts: 1 };
  const node = graphNode(graph, top.node);
  return isLeaf(node.kind) ? { node: node.id, maxAttempts: node.maxAttempts } : { node: undefined, maxAttempts: 1 };
}

/** Params of the nodes visited in `frame`'s walk: batch flows merge the current param set (S9). */
export function walkParams(frame: Frame): JsonObject {
  if (frame.kind !== 'batch') return frame.params;
  const list = frame.prepRes as JsonObject[];
  return { ...frame.params, ...list[frame.batchIndex ?? 0] };
}

/**
 * Records that the visit of `frame.node` ended with `action` and moves the walk to the
 * successor for it (rule S5, with its warning); the `run` frame never follows the root's
 * successors. Leaves `frame.node` unset when the walk has ended.
 */
export function advancePast(graph: CompiledGraph, frame: Frame, action: string | undefined): void {
  const ended = graphNode(graph, frame.node!);
  delete frame.visit;
  if (action === undefined) delete frame.lastAction;
  else frame.lastAction = action;
  const next = frame.kind === 'run' ? undefined : ended.template.getNextNode(action);
  if (next) frame.node = ended.successors.get(action || 'default')!;
  else delete frame.node;
}
