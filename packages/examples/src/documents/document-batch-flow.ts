import { ParallelBatchFlow, type ItemOutcome } from '@queueflow/runtime';
import { missingRecord } from './document-record.js';
import { expandSelection } from '../utils/document-selection.js';
import type { BatchParams, DocumentRef, PipelineShared } from './types.js';

/**
 * The batch over the documents `shared.input` selects: `prep` expands the selection into one
 * parameter set per {@link DocumentRef} (in the process that runs the batch's step), walked concurrently
 * (at most `concurrency` at once embedded; fanned out as child runs on the engines). Each walk
 * writes only `shared.records[docId]`, so parallel walks never write the same path.
 *
 * `prep` makes sure `shared.work` and `shared.records` exist before the fan-out (children must
 * not each create them: on the engines that would be conflicting writes of the same path) and
 * refuses duplicate doc ids. `post` gives every document that ended without a record (a walk
 * that failed on an engine under `onItemError: 'collect'`) a failure record, with the walk's
 * error when the engine passes the outcomes, so every document of the batch has exactly one
 * record.
 *
 * A run may set its own limit of documents in flight with the `concurrency` param: `prep` sets
 * it on the copy of the flow that this visit runs (rule S6: the template keeps its own), and both
 * `flow.run` and the engines read the limit after `prep`, when they know the parameter sets.
 */
export class DocumentBatchFlow extends ParallelBatchFlow<PipelineShared, BatchParams> {
  override async prep(shared: PipelineShared): Promise<DocumentRef[]> {
    const limit = this.params.concurrency;
    if (limit !== undefined && limit !== null) {
      if (!Number.isInteger(limit) || limit < 1) {
        throw new TypeError(
          `DocumentBatchFlow: expected \`params.concurrency\` to be an integer from 1 and up, got \`${JSON.stringify(limit)}\` (${typeof limit})`,
        );
      }
      this.concurrency = limit;
    }
    shared.work ??= {};
    shared.records ??= {};
    const docs = await expandSelection(shared.input);
    const seen = new Set<string>();
    for (const doc of docs) {
      if (seen.has(doc.docId))
        throw new TypeError(`DocumentBatchFlow: duplicate docId '${doc.docId}' in the selection`);
      seen.add(doc.docId);
    }
    return docs;
  }

  /**
   * @param outcomes - one per document on the engines (`onItemError: 'collect'`); `undefined`
   *   with `flow.run`.
   */
  override post(shared: PipelineShared, docs: DocumentRef[], outcomes?: ItemOutcome[]): undefined {
    shared.records ??= {};
    docs.forEach((doc, index) => {
      if (!shared.records[doc.docId]) {
        const outcome = outcomes?.[index];
        const why =
          outcome && !outcome.ok ? `: ${outcome.error.code ?? outcome.error.name}: ${outcome.error.message}` : '';
        shared.records[doc.docId] = missingRecord(doc, `the document's flow ended without writing a record${why}`);
      }
      if (shared.work?.[doc.docId]) delete shared.work[doc.docId];
    });
    return undefined;
  }
}
