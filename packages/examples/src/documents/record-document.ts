import { Node } from '@queueflow/runtime';
import { buildRecord } from './document-record.js';
import { emptyWorkItem } from './work-item.js';
import type { DocumentParams, DocumentRecord, DocumentRef, PipelineShared, WorkItem } from './types.js';

export interface RecordInput {
  ref: DocumentRef;
  work: WorkItem | null;
}

/**
 * The last stage, reached from every other stage (on `"default"` or on `"fail"`): writes the
 * document's record to `shared.records[docId]`, its only key, and removes its work item, so that
 * what a document's walk leaves in `shared` is its record alone.
 */
export class RecordDocument extends Node<PipelineShared, DocumentParams> {
  override prep(shared: PipelineShared): RecordInput {
    const { docId, source, path, kind, trueLabel, split } = this.params;
    return { ref: { docId, source, path, kind, trueLabel, split }, work: shared.work?.[docId] ?? null };
  }

  override exec(input: RecordInput): DocumentRecord {
    return buildRecord(input.ref, input.work);
  }

  override execFallback(input: RecordInput, error: Error): DocumentRecord {
    return buildRecord(input.ref, {
      ...emptyWorkItem(),
      ...input.work,
      failure: { stage: 'record', code: 'ERROR', reason: `${error.name}: ${error.message}` },
    });
  }

  override post(shared: PipelineShared, input: RecordInput, record: DocumentRecord): undefined {
    shared.records ??= {};
    shared.records[input.ref.docId] = record;
    if (shared.work) delete shared.work[input.ref.docId];
    return undefined;
  }
}
