import type { Node } from '../core/node.js';
import type { ItemOutcome } from '../core/parallel-batch-node.js';
import { itemErrorOf } from '../errors/error-record.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Json, JsonObject } from '../json/json.js';
import { mergePatches, type MergeConflict } from '../json/merge-patches.js';
import type { Checkpoint, Frame } from './checkpoint.js';
import { fanOutPolicy, graphNode, type CompiledGraph } from './graph.js';
import { Step } from './step-interpreter.js';
import type {
  ChildOutcome,
  FanOutRequest,
  ItemTryOutcome,
  OnItemError,
  StepContext,
  StepOutcome,
  StepTarget,
} from './step-types.js';
import { advancePast, checkPosition, enterPlainFlows, targetOf, walkParams } from './walk.js';

/**
 * The fan-out side of the interpreter (DESIGN "Fan-out"): where a child run starts, one try of an
 * item, and the fan-in that resumes the parent once every child has ended.
 */

/** The frames a `runs` child starts from (its `shared` is the parent's snapshot), and its first target. */
export function childStart(
  graph: CompiledGraph,
  request: Extract<FanOutRequest, { kind: 'runs' }>,
  index: number,
): { frames: Frame[]; target: StepTarget } {
  const checkpoint: Checkpoint = {
    shared: {},
    frames: [{ kind: 'child', flow: request.flow, params: request.params[index]!, node: request.start }],
  };
  enterPlainFlows(graph, checkpoint);
  return { frames: checkpoint.frames, target: targetOf(checkpoint, graph) };
}

/** Runs try `ctx.attempt` of item `item` of the ParallelBatchNode `nodeId`. */
export async function executeItem(
  graph: CompiledGraph,
  nodeId: string,
  params: JsonObject,
  item: Json,
  ctx: StepContext,
): Promise<ItemTryOutcome> {
  const step = new Step(graph, { shared: {}, frames: [] }, ctx);
  const node = graphNode(graph, nodeId);
  try {
    const copy = step.copyOf<Node<any, any>>(node, params);
    const tried = await step.tryExec(copy, node, item, ctx.attempt);
    if (tried.retry?.type === 'throttled') {
      return { type: 'throttled', key: tried.retry.key, delayMs: tried.retry.delayMs, errors: step.failedTries };
    }
    if (tried.retry?.type === 'retry') {
      return { type: 'retry', error: tried.retry.error, delayMs: tried.retry.delayMs, errors: step.failedTries };
    }
    return { type: 'completed', value: tried.value as Json | undefined, errors: step.failedTries };
  } catch (error) {
    const failed = step.failed(error);
    if (failed.type !== 'failed') throw error;
    return { type: 'failed', error: failed.error, errors: step.failedTries };
  }
}

/**
 * Resumes a parent after its last child has ended: merges the children's patches into `shared`
 * in param-set order (runs) or collects the items' results in item order (items), runs the
 * parallel node's `post`, and settles to the next step.
 *
 * With `onItemError: 'fail-fast'` every outcome must be `completed` (the engine fails the parent
 * at the first failed child instead of resuming it). With `'collect'`, `post` receives one
 * {@link ItemOutcome} per child: for runs `value` is the child's last action.
 */
export async function resumeFanOut(
  graph: CompiledGraph,
  checkpoint: Checkpoint,
  outcomes: readonly (ChildOutcome | undefined)[],
  ctx: StepContext,
): Promise<{ outcome: StepOutcome; conflicts: MergeConflict[] }> {
  const step = new Step(graph, checkpoint, ctx);
  let conflicts: MergeConflict[] = [];
  const outcome = await step.guard(async () => {
    checkPosition(graph, checkpoint, ctx.run?.runId);
    const top = step.top();
    if (top.kind === 'fan-out') {
      const { onItemError } = fanOutPolicy(graphNode(graph, top.flow));
      const ended = requireAllEnded(outcomes, onItemError, top.flow);
      const merged = mergePatches(
        checkpoint.shared,
        ended.map((o) => (o.status === 'completed' ? o.patch : undefined)),
      );
      checkpoint.shared = merged.shared;
      conflicts = merged.conflicts;
      const execRes =
        onItemError === 'collect'
          ? ended.map((o) => toItemOutcome(o, o.status === 'completed' ? o.lastAction : undefined))
          : undefined;
      const action = await step.exitFlow(top, execRes);
      advancePast(graph, step.top(), action);
      return step.settle();
    }
    if (!top.visit?.fannedOut || top.node === undefined) {
      throw new QueueflowError('INTERNAL', `run is not waiting on a fan-out (flow '${graph.flowName}')`);
    }
    const node = graphNode(graph, top.node);
    const { onItemError } = fanOutPolicy(node);
    const ended = requireAllEnded(outcomes, onItemError, node.id);
    const results =
      onItemError === 'collect'
        ? ended.map((o) => toItemOutcome(o, o.status === 'completed' ? o.value : undefined))
        : ended.map((o) => (o.status === 'completed' ? (o.value ?? null) : null));
    const copy = step.copyOf<Node<any, any>>(node, walkParams(top));
    ctx.signal?.throwIfAborted();
    const action = await copy.post(checkpoint.shared, top.visit.prepRes, results);
    return step.finishNode(top, action ?? undefined);
  });
  return { outcome, conflicts };
}

/** Every child's outcome; with fail-fast, all of them completed. */
function requireAllEnded(
  outcomes: readonly (ChildOutcome | undefined)[],
  policy: OnItemError,
  owner: string,
): ChildOutcome[] {
  const missing = outcomes.findIndex((o) => o === undefined);
  if (missing !== -1) {
    throw new QueueflowError('INTERNAL', `'${owner}': child ${missing} has not ended`, { retryable: false });
  }
  const ended = outcomes as ChildOutcome[];
  if (policy === 'collect') return ended;
  const index = ended.findIndex((o) => o.status !== 'completed');
  if (index === -1) return ended;
  const failed = ended[index]!;
  throw new QueueflowError(
    'CHILD_FAILED',
    `'${owner}': child ${index} ${failed.status === 'failed' ? `failed: ${failed.error.message}` : 'was cancelled'}`,
    { retryable: false },
  );
}

function toItemOutcome(outcome: ChildOutcome, value: unknown): ItemOutcome {
  if (outcome.status === 'completed') return { ok: true, value: value ?? null };
  return { ok: false, error: itemErrorOf(outcome) };
}
