import { emptyWorkItem } from './work-item.js';
import type { DocumentFailure, DocumentRecord, DocumentRef, StageTimings, WorkItem } from './types.js';

/**
 * The output record of one document from its reference and its work item: `ok` with the
 * results, or `failed` with the failure and whatever was found before it.
 */
export function buildRecord(ref: DocumentRef, work: WorkItem | null): DocumentRecord {
  const failure: DocumentFailure | null =
    work === null
      ? { stage: 'record', code: 'ERROR', reason: 'no work item: no stage ran for this document' }
      : work.failure;
  const timingMs: StageTimings = { ...work?.timingMs, total: 0 };
  delete (timingMs as Record<string, unknown>).record;
  timingMs.total = Math.round(Object.values(timingMs).reduce((sum, ms) => sum + (ms ?? 0), 0) * 100) / 100;
  const ok = failure === null;
  return {
    id: ref.docId,
    source: ref.source,
    path: ref.path,
    kind: ref.kind,
    status: ok ? 'ok' : 'failed',
    bytes: work?.bytes ?? null,
    subject: work?.subject ?? null,
    senderDomain: work?.senderDomain ?? null,
    date: work?.date ?? null,
    language: ok ? (work?.language ?? null) : null,
    keywords: ok ? (work?.keywords ?? []) : [],
    summary: ok ? (work?.summary ?? null) : null,
    summarySource: ok ? (work?.summarySource ?? null) : null,
    predictedLabel: ok ? (work?.predictedLabel ?? null) : null,
    spamScore: ok ? (work?.spamScore ?? null) : null,
    trueLabel: ref.trueLabel,
    split: ref.split,
    failure,
    warnings: work?.warnings ?? [],
    timingMs,
  };
}

/** A failed record for a document whose flow ended without writing one. */
export function missingRecord(ref: DocumentRef, reason: string): DocumentRecord {
  return buildRecord(ref, {
    ...emptyWorkItem(),
    failure: { stage: 'batch', code: 'ERROR', reason },
  });
}
