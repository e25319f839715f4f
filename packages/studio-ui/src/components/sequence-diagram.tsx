import type { Arrow, Lane, PendingAsk } from './conversation-model';
import { OUTSIDE, shortName } from './conversation-model';
import { duration } from './format';

const GUTTER = 76;
const LANE_WIDTH = 150;
const HEAD = 52;
const ROW = 38;
/** Longest lane label drawn, in characters (the whole address is its title). */
const MAX_LABEL = 19;

export interface SequenceDiagramProps {
  lanes: Lane[];
  arrows: Arrow[];
  /** Questions a turn asked a person, drawn after the messages as dashed arrows to that person. */
  asks: PendingAsk[];
  startedAt: number;
  selected: number | undefined;
  onSelect: (index: number) => void;
}

const KIND_TEXT: Record<Arrow['kind'], string> = {
  send: '',
  ask: 'ask',
  reply: 'reply',
  answer: 'answer',
  received: 'received',
};

function clipped(text: string): string {
  return text.length > MAX_LABEL ? `${text.slice(0, MAX_LABEL - 1)}…` : text;
}

function describe(arrow: Arrow): string {
  const kind = arrow.kind === 'send' ? 'message' : arrow.kind;
  const pair =
    arrow.pair === undefined ? '' : `, ${arrow.kind === 'ask' ? 'answered by' : 'answers'} #${arrow.pair + 1}`;
  const from = arrow.from === OUTSIDE ? 'outside' : shortName(arrow.from);
  return `#${arrow.index + 1} ${kind} from ${from} to ${shortName(arrow.to)}${pair}`;
}

/**
 * The conversation as a sequence diagram (SVG): a lane per participant, the messages of its
 * record as arrows top to bottom in their order (dashed: an answer), each a button that selects
 * it (its whole row is); the time since the conversation began in the left margin.
 */
export function SequenceDiagram({ lanes, arrows, asks, startedAt, selected, onSelect }: SequenceDiagramProps) {
  const x = new Map(lanes.map((lane, i) => [lane.id, GUTTER + i * LANE_WIDTH + LANE_WIDTH / 2] as const));
  const rows = arrows.length + asks.length;
  const width = GUTTER + lanes.length * LANE_WIDTH;
  const height = HEAD + Math.max(rows, 1) * ROW + 16;
  const y = (row: number) => HEAD + row * ROW + ROW / 2 + 6;
  return (
    // Focusable: it scrolls sideways when the lanes are wider than the panel.
    <div class="sequence-canvas" tabIndex={0} role="region" aria-label="Sequence diagram, scrolls sideways">
      <svg
        class="sequence"
        role="group"
        aria-label="Sequence diagram: the messages between the participants, in order"
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        data-testid="sequence-diagram"
      >
        <defs>
          <marker id="seq-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto">
            <path d="M0,0 L10,5 L0,10 z" class="seq-head" />
          </marker>
          <marker
            id="seq-head-selected"
            viewBox="0 0 10 10"
            refX="9"
            refY="5"
            markerWidth="8"
            markerHeight="8"
            orient="auto"
          >
            <path d="M0,0 L10,5 L0,10 z" class="seq-head-selected" />
          </marker>
        </defs>
        {lanes.map((lane) => (
          <g key={lane.id} class={`seq-lane seq-lane-${lane.kind}`} data-testid="sequence-lane" data-lane={lane.id}>
            <title>{lane.id === OUTSIDE ? 'outside any run: clients, people' : lane.id}</title>
            <line x1={x.get(lane.id)} x2={x.get(lane.id)} y1={HEAD - 8} y2={height - 4} class="seq-lifeline" />
            <rect x={x.get(lane.id)! - LANE_WIDTH / 2 + 8} y={6} width={LANE_WIDTH - 16} height={34} rx={6} />
            <text x={x.get(lane.id)} y={28} text-anchor="middle">
              {clipped(lane.label)}
            </text>
          </g>
        ))}
        {arrows.map((arrow) => {
          const from = x.get(arrow.from)!;
          const to = x.get(arrow.to)!;
          const at = y(arrow.index);
          const isSelected = selected === arrow.index;
          const dashed = arrow.kind === 'reply' || arrow.kind === 'answer' || arrow.kind === 'received';
          const path =
            from === to
              ? `M${from},${at - 8} h34 v16 h-32`
              : `M${from + (to > from ? 4 : -4)},${at} L${to + (to > from ? -4 : 4)},${at}`;
          const labelX = from === to ? from + 40 : (from + to) / 2;
          const label = [`#${arrow.index + 1}`, KIND_TEXT[arrow.kind]].filter(Boolean).join(' ');
          const select = () => onSelect(arrow.index);
          return (
            <g
              key={arrow.index}
              class={`seq-message seq-${arrow.kind}${isSelected ? ' selected' : ''}`}
              role="button"
              tabIndex={0}
              aria-pressed={isSelected}
              aria-label={describe(arrow)}
              data-testid={`message-${arrow.index + 1}`}
              onClick={select}
              onKeyDown={(event) => {
                if (event.key !== 'Enter' && event.key !== ' ') return;
                event.preventDefault();
                select();
              }}
            >
              <rect x={0} y={at - ROW / 2 - 4} width={width} height={ROW} class="seq-row" />
              <path
                d={path}
                class={`seq-line${dashed ? ' dashed' : ''}`}
                marker-end={isSelected ? 'url(#seq-head-selected)' : 'url(#seq-head)'}
              />
              <text x={labelX} y={at - 7} text-anchor={from === to ? 'start' : 'middle'} class="seq-label">
                {label}
              </text>
            </g>
          );
        })}
        {/* Outside the buttons: a button's visible text must be in its name (the times are not). */}
        <g aria-hidden="true">
          {arrows.map((arrow) => (
            <text key={arrow.index} x={GUTTER - 10} y={y(arrow.index) + 4} text-anchor="end" class="seq-time">
              +{duration(Math.max(0, arrow.message.at - startedAt))}
            </text>
          ))}
        </g>
        {asks.map((ask, i) => {
          const from = ask.asker === undefined ? undefined : x.get(ask.asker);
          const to = x.get(ask.address);
          if (from === undefined || to === undefined) return null;
          const at = y(arrows.length + i);
          return (
            <g key={ask.message.id} class="seq-pending" data-testid="sequence-pending-ask">
              <title>{`asked ${ask.address}, waiting for an answer`}</title>
              <path
                d={`M${from + (to > from ? 4 : -4)},${at} L${to + (to > from ? -4 : 4)},${at}`}
                class="seq-line dashed"
                marker-end="url(#seq-head)"
              />
              <text x={(from + to) / 2} y={at - 7} text-anchor="middle" class="seq-label">
                ask, waiting
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
