import type { BaseNode } from '../core/base-node.js';
import { invalidOption } from '../core/validate-options.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import { compileGraph, type CompiledGraph } from './graph.js';

/**
 * A registered flow: a name and a function that builds its graph. Clients and workers import
 * the same definition, so every process builds the same graph (checked by fingerprint).
 */
export interface FlowDefinition {
  readonly name: string;
  readonly build: () => BaseNode<any, any>;
}

const FLOW_NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * Whether `name` can name a flow (see {@link defineFlow}): a run record whose `flow` cannot (a
 * module path, say) was not written by queueflow.
 */
export function isFlowName(name: unknown): boolean {
  return typeof name === 'string' && FLOW_NAME.test(name);
}

/**
 * Registers a flow under `name`.
 *
 * @param name - letters, digits, `_`, `.`, `-` (it appears in Redis keys and job ids).
 * @param build - returns the flow's graph; called once per process and engine (node objects
 *   are templates, copied for each visit).
 * @throws TypeError when `name` or `build` is invalid.
 * @example
 * ```ts
 * export const review = defineFlow('review', () => {
 *   const draft = new Draft();
 *   draft.next(new Check()).on('revise', draft);
 *   return new Flow(draft);
 * });
 * ```
 */
export function defineFlow(name: string, build: () => BaseNode<any, any>): FlowDefinition {
  if (!isFlowName(name)) {
    throw invalidOption('defineFlow', 'name', 'a string of letters, digits, _ . or -', name);
  }
  if (typeof build !== 'function') throw invalidOption('defineFlow', 'build', 'a function returning a node', build);
  return Object.freeze({ name, build });
}

/** Flows an engine knows: an array of definitions, or a module namespace / object holding them. */
export type FlowsOption = readonly FlowDefinition[] | Readonly<Record<string, unknown>>;

/** The compiled graphs of the flows an engine knows, built once per registry. */
export class FlowRegistry {
  private readonly definitions = new Map<string, FlowDefinition>();
  private readonly graphs = new Map<string, CompiledGraph>();

  constructor(flows: FlowsOption) {
    // Checked for callers without types: `Object.values(undefined)` would throw a bare TypeError.
    if (typeof flows !== 'object' || flows === null)
      throw invalidOption(
        'flows',
        'flows',
        'an array of FlowDefinitions made by defineFlow, or a module of them',
        flows,
      );
    const candidates = Array.isArray(flows) ? flows : Object.values(flows);
    for (const candidate of candidates) {
      if (!isFlowDefinition(candidate)) {
        if (Array.isArray(flows))
          throw invalidOption('flows', 'flows[]', 'FlowDefinitions made by defineFlow', candidate);
        continue;
      }
      const existing = this.definitions.get(candidate.name);
      if (existing && existing !== candidate) {
        throw new QueueflowError('INVALID_OPTION', `two flows are registered as '${candidate.name}'`);
      }
      this.definitions.set(candidate.name, candidate);
    }
  }

  names(): string[] {
    return [...this.definitions.keys()];
  }

  /** The definition named `flow` (or `flow` itself when registered). @throws UNKNOWN_FLOW. */
  definition(flow: FlowDefinition | string): FlowDefinition {
    const name = typeof flow === 'string' ? flow : flow.name;
    const found = this.definitions.get(name);
    if (found) return found;
    if (typeof flow !== 'string' && isFlowDefinition(flow)) {
      this.definitions.set(name, flow);
      return flow;
    }
    throw new QueueflowError(
      'UNKNOWN_FLOW',
      `unknown flow '${name}'; registered: ${
        this.names()
          .map((n) => `'${n}'`)
          .join(', ') || 'none'
      }`,
      { retryable: false },
    );
  }

  /** The compiled graph of `flow`, built on first use. @throws UNKNOWN_FLOW. */
  graph(flow: FlowDefinition | string): CompiledGraph {
    const definition = this.definition(flow);
    let graph = this.graphs.get(definition.name);
    if (!graph) {
      graph = compileGraph(definition.name, definition.build());
      this.graphs.set(definition.name, graph);
    }
    return graph;
  }
}

export function isFlowDefinition(value: unknown): value is FlowDefinition {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as FlowDefinition).name === 'string' &&
    typeof (value as FlowDefinition).build === 'function'
  );
}
