import { createHash } from 'node:crypto';
import { BaseNode } from '../core/base-node.js';
import { BatchFlow } from '../core/batch-flow.js';
import { BatchNode } from '../core/batch-node.js';
import { Flow } from '../core/flow.js';
import { Node } from '../core/node.js';
import { ParallelBatchFlow } from '../core/parallel-batch-flow.js';
import { ParallelBatchNode } from '../core/parallel-batch-node.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import { DEFAULT_QUEUE } from '../core/queue-name.js';
import type { OnItemError, StepTarget } from './step-types.js';

/** What the step interpreter does with a node. */
export type NodeKind = 'node' | 'batch-node' | 'parallel-batch-node' | 'flow' | 'batch-flow' | 'parallel-batch-flow';

/** Nodes that the interpreter visits in one step (as opposed to flows it walks into). */
export function isLeaf(kind: NodeKind): boolean {
  return kind === 'node' || kind === 'batch-node' || kind === 'parallel-batch-node';
}

function kindOf(node: BaseNode<any, any>): NodeKind {
  if (node instanceof ParallelBatchFlow) return 'parallel-batch-flow';
  if (node instanceof BatchFlow) return 'batch-flow';
  if (node instanceof Flow) return 'flow';
  if (node instanceof ParallelBatchNode) return 'parallel-batch-node';
  if (node instanceof BatchNode) return 'batch-node';
  return 'node';
}

/** One node of a compiled graph. */
export interface GraphNode {
  id: string;
  kind: NodeKind;
  template: BaseNode<any, any>;
  /** Successor ids by action. */
  successors: ReadonlyMap<string, string>;
  /** For flows: the id of the start node. */
  start?: string;
  /** Total tries of `exec` (1 for nodes without a retry policy). */
  maxAttempts: number;
  /** The queue whose workers run its steps, when not the default one (a node's `queue`). */
  queue?: string;
  /** For the parallel kinds: how their fan-out runs. */
  fanOut?: FanOutPolicy;
}

/** How a ParallelBatchNode's or ParallelBatchFlow's fan-out runs on an engine. */
export interface FanOutPolicy {
  /** Most children in flight at once; `undefined`: all. */
  concurrency: number | undefined;
  onItemError: OnItemError;
}

/**
 * A flow's graph with stable node ids, as every process that builds it sees it.
 *
 * Ids: a node's explicit `name`, else `<ClassName>#<n>` where n is its position in a depth-first
 * walk from the root (a flow's start first, then successors in the order they were set). The
 * fingerprint hashes the shape (ids, kinds, classes, edges), so a worker running other code
 * refuses a run instead of resuming it on the wrong graph.
 */
export interface CompiledGraph {
  flowName: string;
  rootId: string;
  nodes: ReadonlyMap<string, GraphNode>;
  fingerprint: string;
}

/**
 * Gives every node of the graph under `root` its stable id and fingerprints the shape.
 *
 * @throws QueueflowError `INVALID_OPTION` when two nodes share an explicit name.
 */
export function compileGraph(flowName: string, root: BaseNode<any, any>): CompiledGraph {
  if (!(root instanceof BaseNode)) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `flow '${flowName}': build() must return a node or flow, got ${typeof root}`,
    );
  }
  const ids = new Map<BaseNode<any, any>, string>();
  const order: BaseNode<any, any>[] = [];
  const named = new Map<string, BaseNode<any, any>>();
  const visit = (node: BaseNode<any, any>): void => {
    if (ids.has(node)) return;
    const id = node.name ?? `${node.constructor.name}#${order.length}`;
    const clash = named.get(id);
    if (clash && clash !== node) {
      throw new QueueflowError(
        'INVALID_OPTION',
        `flow '${flowName}': two nodes are named '${id}'; node names must be unique within a flow`,
      );
    }
    named.set(id, node);
    ids.set(node, id);
    order.push(node);
    if (node instanceof Flow) visit(node.start);
    for (const successor of node.successors.values()) visit(successor);
  };
  visit(root);

  const nodes = new Map<string, GraphNode>();
  const shape: string[] = [];
  for (const node of order) {
    const id = ids.get(node)!;
    const successors = new Map<string, string>();
    for (const [action, successor] of node.successors) successors.set(action, ids.get(successor)!);
    const kind = kindOf(node);
    const start = node instanceof Flow ? ids.get(node.start) : undefined;
    nodes.set(id, {
      id,
      kind,
      template: node,
      successors,
      ...(start !== undefined ? { start } : {}),
      maxAttempts: node instanceof Node ? node.maxRetries : 1,
      ...(node instanceof Node && node.queue !== undefined && node.queue !== DEFAULT_QUEUE
        ? { queue: node.queue }
        : {}),
      ...(node instanceof ParallelBatchNode || node instanceof ParallelBatchFlow
        ? { fanOut: { concurrency: node.concurrency, onItemError: node.onItemError } }
        : {}),
    });
    shape.push(
      `${id}|${kind}|${node.constructor.name}|${start ?? ''}|${[...successors].map(([a, s]) => `${a}>${s}`).join(',')}`,
    );
  }
  const fingerprint = createHash('sha256').update(shape.join('\n')).digest('hex').slice(0, 16);
  return { flowName, rootId: ids.get(root)!, nodes, fingerprint };
}

/**
 * The target of a step that visits leaf `node`: its id, tries and queue (absent for the default
 * queue, so records of runs on the default queue stay as they were).
 */
export function leafTarget(node: GraphNode): StepTarget {
  return { node: node.id, maxAttempts: node.maxAttempts, ...(node.queue === undefined ? {} : { queue: node.queue }) };
}

/** The nodes each flow of a graph walks, by the flow's id (see {@link nodesWalkedBy}), built on first use. */
const walked = new WeakMap<CompiledGraph, Map<string, ReadonlySet<string>>>();

/**
 * The ids of the nodes the walk of flow `flowId` of `graph` can stand at: its start and every
 * node reachable from it through successors (a nested flow's own nodes are that flow's, not
 * this one's). Empty for a node that is not a flow.
 */
export function nodesWalkedBy(graph: CompiledGraph, flowId: string): ReadonlySet<string> {
  let byFlow = walked.get(graph);
  if (!byFlow) walked.set(graph, (byFlow = new Map<string, ReadonlySet<string>>()));
  let nodes = byFlow.get(flowId);
  if (nodes) return nodes;
  const found = new Set<string>();
  const start = graph.nodes.get(flowId)?.start;
  const pending = start === undefined ? [] : [start];
  for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
    if (found.has(id)) continue;
    found.add(id);
    for (const successor of graph.nodes.get(id)?.successors.values() ?? []) pending.push(successor);
  }
  nodes = found;
  byFlow.set(flowId, nodes);
  return nodes;
}

/** The node with `id`, or an INTERNAL error naming the flow (a checkpoint from other code). */
export function graphNode(graph: CompiledGraph, id: string): GraphNode {
  const node = graph.nodes.get(id);
  if (!node) {
    throw new QueueflowError(
      'GRAPH_MISMATCH',
      `flow '${graph.flowName}' has no node '${id}' (fingerprint ${graph.fingerprint})`,
      {
        retryable: false,
      },
    );
  }
  return node;
}

/** The fan-out policy of a parallel node or flow. @throws QueueflowError INTERNAL for another kind. */
export function fanOutPolicy(node: GraphNode): FanOutPolicy {
  if (!node.fanOut) throw new QueueflowError('INTERNAL', `node '${node.id}' (${node.kind}) does not fan out`);
  return node.fanOut;
}
