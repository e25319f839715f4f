import { attributeText, type SpanLine } from './json-lines-exporter.js';

/**
 * A trace as text: one line per span, children indented under their parent in start order, each
 * with its service (process), its offset from the trace's start and its duration, the queueflow
 * attributes that matter and, for a failed try, its error. Spans whose parent is not in `spans`
 * (the caller's own) start the tree.
 */
export function renderTrace(spans: readonly SpanLine[]): string {
  const byParent = new Map<string | undefined, SpanLine[]>();
  const ids = new Set(spans.map((s) => s.spanId));
  for (const span of spans) {
    const parent = span.parentSpanId !== undefined && ids.has(span.parentSpanId) ? span.parentSpanId : undefined;
    byParent.set(parent, [...(byParent.get(parent) ?? []), span]);
  }
  const origin = Math.min(...spans.map((s) => s.startMs));
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number): void => {
    const children = (byParent.get(parent) ?? []).sort((a, b) => a.startMs - b.startMs);
    for (const span of children) {
      const a = span.attributes;
      const runId = attributeText(a['queueflow.run.id']);
      const facts = [
        runId.includes('.') ? `child ${runId.slice(runId.indexOf('.') + 1)}` : '',
        a['queueflow.step'] === undefined ? '' : `step ${attributeText(a['queueflow.step'])}`,
        a['queueflow.attempt'] ? `attempt ${attributeText(a['queueflow.attempt'])}` : '',
        a['queueflow.item'] === undefined ? '' : `item ${attributeText(a['queueflow.item'])}`,
        span.links.length > 0 ? `link ${span.links.join(',')}` : '',
        span.error ? `ERROR ${span.error}` : '',
      ].filter(Boolean);
      const label = `${'  '.repeat(depth)}${span.name}`;
      const timing = `+${(span.startMs - origin).toFixed(0).padStart(5)} ms ${(span.endMs - span.startMs).toFixed(1).padStart(7)} ms`;
      lines.push(`${label.padEnd(44)} ${span.service.padEnd(10)} ${timing}  ${facts.join(', ')}`.trimEnd());
      walk(span.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n');
}
