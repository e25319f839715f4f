import type { DocumentRecord, FailureCode, StageName } from '../documents/types.js';

/** Scores of the classifier on the held-out documents of a run (spam is the positive class). */
export interface HeldOutScores {
  documents: number;
  accuracy: number;
  precision: number;
  recall: number;
  f1: number;
  confusion: { truePositive: number; falsePositive: number; trueNegative: number; falseNegative: number };
}

/** What a run's report says; {@link formatReport} prints it. */
export interface PipelineReport {
  documents: number;
  ok: number;
  failed: number;
  failuresByCode: Partial<Record<FailureCode, number>>;
  withWarnings: number;
  predicted: { spam: number; ham: number };
  trueLabels: { spam: number; ham: number; unknown: number };
  /** `null` when the run had no held-out (test split) document with a prediction. */
  heldOut: HeldOutScores | null;
  elapsedMs: number;
  documentsPerSecond: number;
  slowest: Array<{ id: string; totalMs: number; slowestStage: StageName | null; stageMs: number }>;
  failures: Array<{ id: string; stage: string; code: FailureCode; reason: string }>;
}

/**
 * The report of a run from its records (in output order) and its wall-clock time.
 *
 * @param elapsedMs - wall-clock time of the batch, in milliseconds.
 * @param slowestCount - how many of the slowest documents to list. @defaultValue 5
 */
export function buildReport(records: DocumentRecord[], elapsedMs: number, slowestCount = 5): PipelineReport {
  const failuresByCode: Partial<Record<FailureCode, number>> = {};
  const predicted = { spam: 0, ham: 0 };
  const trueLabels = { spam: 0, ham: 0, unknown: 0 };
  const failures: PipelineReport['failures'] = [];
  const confusion = { truePositive: 0, falsePositive: 0, trueNegative: 0, falseNegative: 0 };
  let ok = 0;
  let withWarnings = 0;
  for (const record of records) {
    trueLabels[record.trueLabel ?? 'unknown']++;
    if (record.warnings.length > 0) withWarnings++;
    if (record.status === 'failed' || record.failure) {
      const failure = record.failure ?? { stage: 'record', code: 'ERROR' as const, reason: 'failed without a reason' };
      failuresByCode[failure.code] = (failuresByCode[failure.code] ?? 0) + 1;
      failures.push({ id: record.id, stage: failure.stage, code: failure.code, reason: failure.reason });
      continue;
    }
    ok++;
    if (record.predictedLabel) predicted[record.predictedLabel]++;
    if (record.split === 'test' && record.trueLabel && record.predictedLabel) {
      const positive = record.predictedLabel === 'spam';
      const correct = record.predictedLabel === record.trueLabel;
      if (positive) confusion[correct ? 'truePositive' : 'falsePositive']++;
      else confusion[correct ? 'trueNegative' : 'falseNegative']++;
    }
  }
  const slowest = records
    .filter((record) => record.status === 'ok')
    .map((record) => {
      const stages = Object.entries(record.timingMs).filter(([stage]) => stage !== 'total') as [StageName, number][];
      const [slowestStage, stageMs] = stages.reduce<[StageName | null, number]>(
        (best, entry) => (entry[1] > best[1] ? entry : best),
        [null, 0],
      );
      return { id: record.id, totalMs: record.timingMs.total, slowestStage, stageMs };
    })
    .sort((a, b) => b.totalMs - a.totalMs || (a.id < b.id ? -1 : 1))
    .slice(0, slowestCount);
  return {
    documents: records.length,
    ok,
    failed: records.length - ok,
    failuresByCode,
    withWarnings,
    predicted,
    trueLabels,
    heldOut: scores(confusion),
    elapsedMs: Math.round(elapsedMs),
    documentsPerSecond: elapsedMs > 0 ? Math.round((records.length / elapsedMs) * 1000 * 10) / 10 : 0,
    slowest,
    failures,
  };
}

function scores(confusion: HeldOutScores['confusion']): HeldOutScores | null {
  const { truePositive: tp, falsePositive: fp, trueNegative: tn, falseNegative: fn } = confusion;
  const documents = tp + fp + tn + fn;
  if (documents === 0) return null;
  const precision = tp + fp === 0 ? 0 : tp / (tp + fp);
  const recall = tp + fn === 0 ? 0 : tp / (tp + fn);
  return {
    documents,
    accuracy: (tp + tn) / documents,
    precision,
    recall,
    f1: precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall),
    confusion,
  };
}
