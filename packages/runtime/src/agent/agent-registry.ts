import type { FlowDefinition, FlowsOption } from '../interpreter/flow-definition.js';
import { isAgentDefinition, type AgentDefinition } from './define-agent.js';

/**
 * The agent types an engine or worker runs: those given in `agents`, and those a module given as
 * `flows` exports (the CLI's `--flows` module may export agents beside flows).
 */
export function agentsOf(flows: FlowsOption, agents: readonly AgentDefinition<any>[] = []): AgentDefinition<any>[] {
  const found = new Set(agents);
  if (!Array.isArray(flows) && typeof flows === 'object' && flows !== null)
    for (const value of Object.values(flows)) if (isAgentDefinition(value)) found.add(value);
  return [...found];
}

/** `flows` with the turn flow of each agent type added: workers run turns as runs of these flows. */
export function withTurnFlows(flows: FlowsOption, agents: readonly AgentDefinition<any>[]): FlowsOption {
  if (agents.length === 0) return flows;
  const turns = agents.map((agent) => agent.flow);
  if (Array.isArray(flows)) return [...(flows as readonly FlowDefinition[]), ...turns];
  return { ...flows, ...Object.fromEntries(turns.map((flow) => [flow.name, flow])) };
}
