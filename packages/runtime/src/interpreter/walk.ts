import { BaseNode } from '../core/base-node.js';
import { warn } from '../core/warnings.js';
import { corruptRunError } from '../errors/error-record.js';
import type { Checkpoint, Frame, FrameKind } from './checkpoint.js';
import { graphNode, isLeaf, leafTarget, nodesWalkedBy, type CompiledGraph } from './graph.js';
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

const FRAME_KINDS: ReadonlySet<string> = new Set<FrameKind>(['run', 'flow', 'batch', 'fan-out', 'child']);

/**
 * Checks that a step can resume from `checkpoint` on `graph`: it has frames, and every frame is
 * one, walks a flow of the graph and stands at a node of that flow's walk; the bottom frame is the
 * run's (at the graph's root) or a fan-out child's, and every frame above walks the flow the frame
 * below it stands at. The fingerprint check has already made sure that the graph is the run's
 * own, so a name the graph lacks, or a node of another flow, means a corrupted record.
 *
 * @param runId - the run, named in the error.
 * @throws QueueflowError `CORRUPT_RUN` naming the run, the flow and the first problem found.
 */
export function checkPosition(graph: CompiledGraph, checkpoint: Checkpoint, runId: string | undefined): void {
  const problem = positionProblem(graph, checkpoint.frames);
  if (problem) throw corruptRunError({ id: runId, flow: graph.flowName }, problem);
}

function positionProblem(graph: CompiledGraph, frames: readonly Frame[]): string | undefined {
  if (frames.length === 0) return 'its checkpoint has no frames left, as if it had ended: nothing to step';
  for (const [i, frame] of frames.entries()) {
    if (typeof frame !== 'object' || frame === null || !FRAME_KINDS.has(frame.kind)) {
      return `frame ${i} of its checkpoint is not a frame (${JSON.stringify(frame)})`;
    }
    if (!graph.nodes.has(frame.flow)) {
      return `frame ${i} (${frame.kind}) walks flow '${frame.flow}', which the flow does not have`;
    }
    if (frame.node !== undefined && !graph.nodes.has(frame.node)) {
      return `frame ${i} (${frame.kind}) stands at node '${frame.node}', which the flow does not have`;
    }
    const problem = placeProblem(graph, frames, i);
    if (problem) return `frame ${i} (${frame.kind}) ${problem}`;
  }
  return undefined;
}

/** Frames whose kind says they are the bottom one (a run, a fan-out child's run). */
const BOTTOM_KINDS: ReadonlySet<FrameKind> = new Set<FrameKind>(['run', 'child']);

/** What is wrong with the place of frame `i` (whose flow and node the graph has), if anything. */
function placeProblem(graph: CompiledGraph, frames: readonly Frame[], i: number): string | undefined {
  const frame = frames[i]!;
  if (BOTTOM_KINDS.has(frame.kind) !== (i === 0)) {
    return i === 0 ? 'is at the bottom, where a run or child frame belongs' : 'belongs at the bottom only';
  }
  if (frame.kind === 'run') {
    if (frame.flow !== graph.rootId) return `walks '${frame.flow}', not the flow's root '${graph.rootId}'`;
    if (frame.node !== undefined && frame.node !== graph.rootId)
      return `stands at node '${frame.node}', not at the flow's root '${graph.rootId}'`;
    return undefined;
  }
  const below = frames[i - 1];
  if (below && below.node !== frame.flow) {
    return `walks flow '${frame.flow}', but the frame below stands at '${below.node ?? '(its end)'}'`;
  }
  if (frame.node !== undefined && !nodesWalkedBy(graph, frame.flow).has(frame.node)) {
    return `stands at node '${frame.node}', which flow '${frame.flow}' does not walk (a node of another flow)`;
  }
  return undefined;
}

/** What the next step of `checkpoint` targets. */
export function targetOf(checkpoint: Checkpoint, graph: CompiledGraph): StepTarget {
  const top = checkpoint.frames[checkpoint.frames.length - 1];
  if (top?.node === undefined) return { node: undefined, maxAttempts: 1 };
  const node = graphNode(graph, top.node);
  return isLeaf(node.kind) ? leafTarget(node) : { node: undefined, maxAttempts: 1 };
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
