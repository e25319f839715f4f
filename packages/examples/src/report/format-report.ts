import type { PipelineReport } from './pipeline-report.js';

/** Extra lines about the run that the records do not hold (engine, classifier training...). */
export interface ReportContext {
  title?: string;
  lines?: string[];
}

/** The report as text for a terminal. */
export function formatReport(report: PipelineReport, context: ReportContext = {}): string {
  const out: string[] = [];
  const rule = '─'.repeat(72);
  out.push(rule, context.title ?? 'Document pipeline report', rule);
  for (const line of context.lines ?? []) out.push(line);
  out.push(
    `Documents        ${report.documents}  (ok ${report.ok}, failed ${report.failed}, with warnings ${report.withWarnings})`,
    `True labels      spam ${report.trueLabels.spam}, ham ${report.trueLabels.ham}, unknown ${report.trueLabels.unknown}`,
    `Predicted        spam ${report.predicted.spam}, ham ${report.predicted.ham}`,
    `Throughput       ${report.documentsPerSecond} documents/s  (${(report.elapsedMs / 1000).toFixed(1)} s for the batch)`,
  );
  if (report.heldOut) {
    const h = report.heldOut;
    const c = h.confusion;
    out.push(
      '',
      `Held-out split (${h.documents} documents never trained on; spam = positive)`,
      `  accuracy ${percent(h.accuracy)}   precision ${percent(h.precision)}   recall ${percent(h.recall)}   F1 ${percent(h.f1)}`,
      `  confusion: ${c.truePositive} spam caught, ${c.falseNegative} spam missed, ${c.falsePositive} ham flagged, ${c.trueNegative} ham passed`,
    );
  } else {
    out.push('', 'Held-out split: no labelled held-out document in this run (no accuracy to report)');
  }
  if (report.slowest.length > 0) {
    out.push('', 'Slowest documents (own work per stage; file reads not counted)');
    for (const s of report.slowest) {
      out.push(
        `  ${s.totalMs.toFixed(1).padStart(8)} ms  ${s.id}${s.slowestStage ? `  (${s.slowestStage} ${s.stageMs.toFixed(1)} ms)` : ''}`,
      );
    }
  }
  const codes = Object.entries(report.failuresByCode)
    .map(([code, count]) => `${code} ${count}`)
    .join(', ');
  out.push('', report.failures.length === 0 ? 'Failures: none' : `Failures (${report.failures.length}: ${codes})`);
  for (const f of report.failures) out.push(`  ${f.id}  [${f.stage}] ${f.code}: ${f.reason}`);
  out.push(rule);
  return out.join('\n');
}

function percent(value: number): string {
  return `${(value * 100).toFixed(1)}%`;
}
