import { BaseNode } from '../core/base-node.js';
import { DEFAULT_ACTION } from '../core/types.js';
import { invalidOption } from '../core/validate-options.js';
import { compileGraph, type CompiledGraph, type GraphNode } from './graph.js';
import type { FlowDefinition } from './flow-definition.js';

/** A flow's graph for drawing: its nodes and edges, and the same as a Mermaid flowchart. */
export interface FlowGraph {
  flow: string;
  /** Id of the root node (the flow itself for a Flow). */
  root: string;
  nodes: { id: string; kind: string; start?: string; successors: Record<string, string> }[];
  /** Mermaid flowchart source (see toMermaid). */
  mermaid: string;
  /** Node id → its id in the Mermaid source (for styling a node by id). */
  mermaidIds: Record<string, string>;
}

/** Options of {@link toMermaid}. */
export interface MermaidOptions {
  /** Mermaid flowchart direction: top-down or left-right. @defaultValue 'TD' */
  direction?: 'TD' | 'LR';
}

/**
 * The graph of a flow as a Mermaid flowchart (https://mermaid.js.org/syntax/flowchart.html),
 * for docs and debugging. Node labels are the stable ids that runs report as `currentNode`
 * (see `defineFlow`), the root's the flow's name, with the kind when it is not a plain node; each
 * Flow is a subgraph; labels are text (markup in a name is written as Mermaid entity codes);
 * edges carry their action, unlabelled for `"default"`; `start` points at the root's start node.
 *
 * @param flow - a FlowDefinition (its `build` is called once) or a node or flow object.
 * @returns the flowchart source, one statement per line.
 * @throws TypeError when `flow` is neither; QueueflowError `INVALID_OPTION` when two nodes share a name.
 * @example
 * ```ts
 * console.log(toMermaid(review)); // paste into any Mermaid renderer
 * ```
 */
export function toMermaid(flow: FlowDefinition | BaseNode<any, any>, options: MermaidOptions = {}): string {
  return mermaidOf(graphOf(flow), options);
}

/**
 * A compiled graph for drawing: its nodes and edges by id, and the same as a Mermaid flowchart
 * with the Mermaid id of each node (so a view can style a node by its id).
 */
export function flowGraphOf(graph: CompiledGraph): FlowGraph {
  return {
    flow: graph.flowName,
    root: graph.rootId,
    nodes: [...graph.nodes.values()].map((node) => ({
      id: node.id,
      kind: node.kind,
      ...(node.start === undefined ? {} : { start: node.start }),
      successors: Object.fromEntries(node.successors),
    })),
    mermaid: mermaidOf(graph, {}),
    mermaidIds: Object.fromEntries(mermaidIds(graph)),
  };
}

// Mermaid ids must be plain words: node ids ("Summarize#3", "a b") become n0, n1, ... labelled with the id.
function mermaidIds(graph: CompiledGraph): Map<string, string> {
  return new Map([...graph.nodes.keys()].map((id, index) => [id, `n${index}`] as const));
}

function mermaidOf(graph: CompiledGraph, options: MermaidOptions): string {
  const direction = options.direction ?? 'TD';
  if (direction !== 'TD' && direction !== 'LR')
    throw invalidOption('toMermaid', 'direction', "'TD' or 'LR'", direction);

  const mermaidId = mermaidIds(graph);
  const lines = [`flowchart ${direction}`];
  const placed = new Set<string>();
  const place = (node: GraphNode, indent: string): void => {
    if (placed.has(node.id)) return;
    placed.add(node.id);
    const ref = mermaidId.get(node.id)!;
    // The root, unless named, is labelled with the flow's name rather than its id (`Flow#0`).
    const name = node.id === graph.rootId && node.template.name === undefined ? graph.flowName : node.id;
    const label = escapeLabel(node.kind === 'node' ? name : `${name} (${node.kind})`);
    if (node.start === undefined) {
      lines.push(`${indent}${ref}["${label}"]`);
      return;
    }
    lines.push(`${indent}subgraph ${ref}["${label}"]`);
    for (const member of membersOf(graph, node.start, placed)) place(member, `${indent}  `);
    lines.push(`${indent}end`);
  };
  const root = graph.nodes.get(graph.rootId)!;
  place(root, '  ');
  for (const node of graph.nodes.values()) place(node, '  '); // successors of the root, if any

  const entry = root.start ?? root.id;
  lines.push(`  start((start)) --> ${mermaidId.get(entry)}`);
  for (const node of graph.nodes.values()) {
    for (const [action, successor] of node.successors) {
      const arrow = action === DEFAULT_ACTION ? '-->' : `-->|"${escapeLabel(action)}"|`;
      lines.push(`  ${mermaidId.get(node.id)} ${arrow} ${mermaidId.get(successor)}`);
    }
  }
  return lines.join('\n');
}

function graphOf(flow: FlowDefinition | BaseNode<any, any>): CompiledGraph {
  if (flow instanceof BaseNode) return compileGraph(flow.name ?? flow.constructor.name, flow);
  if (typeof flow === 'object' && flow !== null && typeof flow.build === 'function')
    return compileGraph(flow.name, flow.build());
  throw invalidOption('toMermaid', 'flow', 'a FlowDefinition or a node', flow);
}

/** The nodes a flow walks from `startId` along successors, not yet placed in an outer subgraph. */
function membersOf(graph: CompiledGraph, startId: string, placed: ReadonlySet<string>): GraphNode[] {
  const members: GraphNode[] = [];
  const seen = new Set<string>();
  const pending = [startId];
  while (pending.length > 0) {
    const id = pending.shift()!;
    if (seen.has(id) || placed.has(id)) continue;
    seen.add(id);
    const node = graph.nodes.get(id)!;
    members.push(node);
    pending.push(...node.successors.values());
  }
  return members;
}

/** Mermaid's entity code (https://mermaid.js.org/syntax/flowchart.html#entity-codes-to-escape-characters) per character. */
const ENTITIES: Record<string, string> = {
  '"': '#quot;',
  '<': '#lt;',
  '>': '#gt;',
  '&': '#amp;',
  '`': '#96;', // a label in backticks is Markdown
};

/**
 * A label inside Mermaid double quotes, shown as the text it is: every character Mermaid (or the
 * HTML its labels become) would read as syntax or markup is written as an entity code, and so is
 * a `#` that would start one (`#lt;` in a name stays those four characters).
 */
function escapeLabel(text: string): string {
  return text.replace(/#(?=\w+;)/g, '#35;').replace(/["<>&`]/g, (char) => ENTITIES[char]!);
}
