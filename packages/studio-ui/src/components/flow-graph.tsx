import { useEffect, useMemo, useState } from 'preact/hooks';
import type MermaidModule from 'mermaid';
import type { FlowGraph } from '../api/types';

type Mermaid = typeof MermaidModule;
let mermaid: Promise<Mermaid> | undefined;
/** Mermaid, loaded the first time a graph shows (it is the largest part of the page). */
function loadMermaid(): Promise<Mermaid> {
  mermaid ??= import('mermaid').then(({ default: loaded }) => {
    loaded.initialize({
      startOnLoad: false,
      securityLevel: 'strict',
      theme: 'base',
      themeVariables: {
        fontFamily: 'system-ui, sans-serif',
        primaryColor: '#f8fafc',
        primaryBorderColor: '#64748b',
        lineColor: '#64748b',
      },
      // Labels as HTML, nodes and edges alike (`flowchart.htmlLabels` is deprecated and reached only
      // the edges): the browser wraps them, where Mermaid's SVG text cut a long word inside an entity
      // code. A name is text either way: the graph's source writes markup as entity codes (toMermaid).
      htmlLabels: true,
      flowchart: { useMaxWidth: true },
    });
    return loaded;
  });
  return mermaid;
}

/** What happened to which node of a run. */
export interface NodeMarks {
  visited: string[];
  current?: string | undefined;
  failed?: string | undefined;
}

const CLASS_DEFS = [
  'classDef visited fill:#dbeafe,stroke:#1d4ed8,color:#0f172a',
  'classDef current fill:#fde68a,stroke:#92400e,stroke-width:3px,color:#0f172a',
  'classDef failed fill:#fecaca,stroke:#991b1b,stroke-width:3px,color:#0f172a',
];

/** The flow's Mermaid source with a class per marked node (failed, else current, else visited). */
function markedSource(graph: FlowGraph, marks: NodeMarks): string {
  const ids = (nodes: (string | undefined)[]) =>
    nodes.flatMap((node) => (node !== undefined && graph.mermaidIds[node] ? [graph.mermaidIds[node]] : []));
  const failed = ids([marks.failed]);
  const current = ids([marks.current]).filter((id) => !failed.includes(id));
  const visited = [...new Set(ids(marks.visited))].filter((id) => !failed.includes(id) && !current.includes(id));
  const lines = [graph.mermaid, ...CLASS_DEFS];
  if (visited.length) lines.push(`class ${visited.join(',')} visited`);
  if (current.length) lines.push(`class ${current.join(',')} current`);
  if (failed.length) lines.push(`class ${failed.join(',')} failed`);
  return lines.join('\n');
}

let renders = 0;

/**
 * A flow's graph drawn by Mermaid, its nodes coloured by what the run did: visited, current,
 * failed. The same facts are written out under it, for readers who do not see the colours.
 */
export function FlowGraphView({ graph, marks }: { graph: FlowGraph; marks: NodeMarks }) {
  const source = useMemo(
    () => markedSource(graph, marks),
    [graph, marks.visited.join('\n'), marks.current, marks.failed],
  );
  const [svg, setSvg] = useState<string>();
  const [problem, setProblem] = useState<string>();
  useEffect(() => {
    let gone = false;
    loadMermaid()
      .then((loaded) => loaded.render(`qf-graph-${++renders}`, source))
      .then(
        ({ svg: drawn }) => !gone && (setSvg(drawn), setProblem(undefined)),
        (error: unknown) => !gone && setProblem((error as Error).message),
      );
    return () => void (gone = true);
  }, [source]);
  const visited = [...new Set(marks.visited)];
  return (
    <figure class="graph">
      {problem ? (
        <p class="problem">Mermaid could not draw this graph: {problem}</p>
      ) : svg ? (
        // Mermaid's own SVG: names arrive as entity codes, so they are text; the strict security
        // level sanitises labels besides.
        <div
          class="graph-canvas"
          data-testid="flow-graph"
          role="img"
          aria-label={`Graph of flow ${graph.flow}`}
          dangerouslySetInnerHTML={{ __html: svg }}
        />
      ) : (
        <p class="muted" role="status">
          Drawing the graph…
        </p>
      )}
      <figcaption>
        <ul class="legend">
          <li>
            <span class="swatch current" aria-hidden="true" /> current:{' '}
            <strong data-testid="graph-current">{marks.current ?? '—'}</strong>
          </li>
          <li>
            <span class="swatch failed" aria-hidden="true" /> failed:{' '}
            <strong data-testid="graph-failed">{marks.failed ?? '—'}</strong>
          </li>
          <li>
            <span class="swatch visited" aria-hidden="true" /> visited:{' '}
            <span data-testid="graph-visited">{visited.length ? visited.join(', ') : '—'}</span>
          </li>
        </ul>
      </figcaption>
    </figure>
  );
}
