import type { Node } from '../core/node.js';
import type { ItemOutcome } from '../core/parallel-batch-node.js';
import type { ErrorRecord } from '../errors/error-record.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Checkpoint } from './checkpoint.js';
import { graphNode, type CompiledGraph } from './graph.js';
import type { Json, JsonObject } from './json.js';
import { mergePatches, type MergeConflict, type PatchOperation } from './merge-patches.js';
import { Step, type StepContext, type StepOutcome, type StepResult, type StepTarget } from './step-interpreter.js';
import { advancePast, enterPlainFlows, targetOf, walkParams } from './walk.js';

/**
 * A parallel class asks its engine to fan out (DESIGN "Fan-out"):
 * - `walks`: a ParallelBatchFlow; one child run per param set, each walking the flow's graph from
 *   `start` with `params[i]`, from a snapshot of the parent's `shared`;
 * - `items`: a ParallelBatchNode; one child task per item, `exec` with the node's retry policy.
 */
export type FanOutRequest =
  | {
      kind: 'walks';
      flow: string;
      start: string;
      /** Merged params of each child, in param-set order. */
      params: JsonObject[];
      concurrency: number | undefined;
      onItemError: 'fail-fast' | 'collect';
    }
  | {
      kind: 'items';
      node: string;
      params: JsonObject;
      items: Json[];
      concurrency: number | undefined;
      onItemError: 'fail-fast' | 'collect';
      maxAttempts: number;
    };

/** How one child ended. `patch` (walks) is its change to the snapshot as JSON Patch. */
export type ChildOutcome =
  | { status: 'completed'; patch?: PatchOperation[]; lastAction?: string | undefined; value?: Json }
  | { status: 'failed'; error: ErrorRecord }
  | { status: 'cancelled' };

/** The checkpoint a `walks` child run starts from. `snapshot` is the parent's `shared` (a copy). */
export function walkCheckpoint(
  graph: CompiledGraph,
  request: Extract<FanOutRequest, { kind: 'walks' }>,
  index: number,
  snapshot: JsonObject,
): { checkpoint: Checkpoint; target: StepTarget } {
  const checkpoint: Checkpoint = {
    shared: snapshot,
    frames: [{ kind: 'walk', flow: request.flow, params: request.params[index]!, node: request.start }],
  };
  enterPlainFlows(graph, checkpoint);
  return { checkpoint, target: targetOf(checkpoint, graph) };
}

/** One try of an `items` child: `exec` of the item, or a retry, or the fallback on the last try. */
export type ItemStepOutcome = (
  | { type: 'completed'; value: Json | undefined }
  | { type: 'retry'; error: ErrorRecord; delayMs: number }
  | { type: 'failed'; error: ErrorRecord }
) & {
  /** Failed tries of this attempt (the failed try itself, or one the fallback rescued). */
  errors: ErrorRecord[];
};

/** Runs try `ctx.attempt` of item `item` of the ParallelBatchNode `nodeId`. */
export async function executeItem(
  graph: CompiledGraph,
  nodeId: string,
  params: JsonObject,
  item: Json,
  ctx: StepContext,
): Promise<ItemStepOutcome> {
  const step = new Step(graph, { shared: {}, frames: [] }, ctx);
  const node = graphNode(graph, nodeId);
  try {
    const copy = step.copyOf<Node<any, any>>(node, params);
    const tried = await step.tryExec(copy, node, item, ctx.attempt);
    if (tried.retry) {
      const retry = tried.retry as Extract<StepResult, { type: 'retry' }>;
      return { type: 'retry', error: retry.error, delayMs: retry.delayMs, errors: step.failedTries };
    }
    return { type: 'completed', value: tried.value as Json | undefined, errors: step.failedTries };
  } catch (error) {
    const failed = step.failed(error) as Extract<StepResult, { type: 'failed' }>;
    return { type: 'failed', error: failed.error, errors: step.failedTries };
  }
}

/**
 * Resumes a parent after its last child has ended: merges the children's patches into `shared`
 * in param-set order (walks) or collects the items' results in item order (items), runs the
 * parallel node's `post`, and settles to the next step.
 *
 * With `onItemError: 'fail-fast'` every outcome must be `completed` (the engine fails the parent
 * at the first failed child instead of resuming it). With `'collect'`, `post` receives one
 * {@link ItemOutcome} per child: for walks `value` is the child's last action.
 */
export async function resumeFanOut(
  graph: CompiledGraph,
  checkpoint: Checkpoint,
  outcomes: readonly ChildOutcome[],
  ctx: StepContext,
): Promise<{ outcome: StepOutcome; conflicts: MergeConflict[] }> {
  const step = new Step(graph, checkpoint, ctx);
  let conflicts: MergeConflict[] = [];
  const outcome = await step.guard(async () => {
    const top = step.top();
    if (top.kind === 'fan-out') {
      const flow = graphNode(graph, top.flow);
      const policy = (flow.template as unknown as { onItemError: 'fail-fast' | 'collect' }).onItemError;
      requireAllCompleted(outcomes, policy, top.flow);
      const merged = mergePatches(
        checkpoint.shared,
        outcomes.map((o) => (o.status === 'completed' ? o.patch : undefined)),
      );
      checkpoint.shared = merged.shared;
      conflicts = merged.conflicts;
      const execRes =
        policy === 'collect'
          ? outcomes.map((o) => toItemOutcome(o, o.status === 'completed' ? o.lastAction : undefined))
          : undefined;
      const action = await step.exitFlow(top, execRes);
      advancePast(graph, step.top(), action);
      return step.settle();
    }
    if (!top.visit?.fannedOut || top.node === undefined) {
      throw new QueueflowError('INTERNAL', `run is not waiting on a fan-out (flow '${graph.flowName}')`);
    }
    const node = graphNode(graph, top.node);
    const policy = (node.template as unknown as { onItemError: 'fail-fast' | 'collect' }).onItemError;
    requireAllCompleted(outcomes, policy, node.id);
    const results =
      policy === 'collect'
        ? outcomes.map((o) => toItemOutcome(o, o.status === 'completed' ? o.value : undefined))
        : outcomes.map((o) => (o.status === 'completed' ? (o.value ?? null) : null));
    const copy = step.copyOf<Node<any, any>>(node, walkParams(top));
    ctx.signal?.throwIfAborted();
    const action = await copy.post(checkpoint.shared, top.visit.prepRes, results);
    return step.finishNode(top, action ?? undefined);
  });
  return { outcome, conflicts };
}

function requireAllCompleted(outcomes: readonly ChildOutcome[], policy: string, owner: string): void {
  if (policy === 'collect') return;
  const index = outcomes.findIndex((o) => o.status !== 'completed');
  if (index === -1) return;
  const failed = outcomes[index]!;
  throw new QueueflowError(
    'CHILD_FAILED',
    `'${owner}': child ${index} ${failed.status === 'failed' ? `failed: ${failed.error.message}` : 'was cancelled'}`,
    { retryable: false },
  );
}

function toItemOutcome(outcome: ChildOutcome, value: unknown): ItemOutcome {
  if (outcome.status === 'completed') return { ok: true, value: value ?? null };
  if (outcome.status === 'cancelled')
    return { ok: false, error: { name: 'QueueflowError', message: 'cancelled', code: 'RUN_CANCELLED' } };
  const { name, message, code } = outcome.error;
  return { ok: false, error: { name, message, ...(code ? { code } : {}) } };
}
