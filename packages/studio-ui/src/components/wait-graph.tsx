import { Link } from 'wouter-preact';
import { agentHref } from '../views/agents-view';
import type { Lane, WaitEdge } from './conversation-model';
import { isAgentRef, shortName } from './conversation-model';
import { TimeAgo } from './time-text';

const NODE_GAP = 190;
const NODE_WIDTH = 160;
const TOP = 70;

const KIND_TEXT: Record<WaitEdge['kind'], string> = {
  agent: 'the answer of',
  person: 'the answer of the person at',
  address: 'a message at',
};

/**
 * The wait-for graph now: who each parked turn of the conversation waits for, drawn as arrows
 * between the agents (and the people asked), and listed with since when and the turn's run.
 */
export function WaitGraph({ edges, lanes, now }: { edges: WaitEdge[]; lanes: Lane[]; now: number }) {
  if (edges.length === 0)
    return (
      <p class="muted" data-testid="conversation-waits">
        No turn of this conversation is parked now.
      </p>
    );
  const order = new Map(lanes.map((lane, i) => [lane.id, i] as const));
  const nodes = [...new Set(edges.flatMap((edge) => [edge.agent, edge.target]))].sort(
    (a, b) => (order.get(a) ?? order.size) - (order.get(b) ?? order.size),
  );
  const x = new Map(nodes.map((node, i) => [node, 20 + i * NODE_GAP + NODE_WIDTH / 2] as const));
  const width = 40 + (nodes.length - 1) * NODE_GAP + NODE_WIDTH;
  return (
    <>
      <div class="sequence-canvas" tabIndex={0} role="region" aria-label="Wait-for graph, scrolls sideways">
        <svg
          class="wait-graph"
          role="img"
          aria-label={`Wait-for graph: ${edges.map((edge) => `${shortName(edge.agent)} waits for ${shortName(edge.target)}`).join('; ')}`}
          width={width}
          height={TOP + 40}
          viewBox={`0 0 ${width} ${TOP + 40}`}
        >
          <defs>
            <marker id="wait-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto">
              <path d="M0,0 L10,5 L0,10 z" class="wait-head" />
            </marker>
          </defs>
          {edges.map((edge) => {
            const from = x.get(edge.agent)!;
            const to = x.get(edge.target)!;
            const lift = 20 + Math.abs(to - from) / 8;
            return (
              <path
                key={edge.runId}
                d={`M${from},${TOP} C${from},${TOP - lift * 2} ${to},${TOP - lift * 2} ${to},${TOP - 2}`}
                class="wait-edge"
                marker-end="url(#wait-head)"
              />
            );
          })}
          {nodes.map((node) => (
            <g key={node} class={`wait-node${isAgentRef(node) ? '' : ' person'}`}>
              <rect x={x.get(node)! - NODE_WIDTH / 2} y={TOP} width={NODE_WIDTH} height={30} rx={6} />
              <text x={x.get(node)} y={TOP + 20} text-anchor="middle">
                {shortName(node).slice(0, 24)}
              </text>
            </g>
          ))}
        </svg>
      </div>
      <ul class="plain waits" data-testid="conversation-waits">
        {edges.map((edge) => (
          <li key={edge.runId} data-testid="conversation-wait">
            <Link href={agentHref(edge.agent)}>
              <code>{shortName(edge.agent)}</code>
            </Link>{' '}
            waits for {KIND_TEXT[edge.kind]}{' '}
            {isAgentRef(edge.target) ? (
              <Link href={agentHref(edge.target)}>
                <code>{shortName(edge.target)}</code>
              </Link>
            ) : (
              <code>{edge.target}</code>
            )}{' '}
            <span class="muted">
              since <TimeAgo at={edge.since} now={now} /> · on <code>{edge.on}</code> · turn run{' '}
              <Link href={`/runs/${encodeURIComponent(edge.runId)}`}>
                <code>{edge.runId}</code>
              </Link>
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}
