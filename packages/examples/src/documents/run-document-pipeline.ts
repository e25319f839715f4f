import { buildDocumentPipeline, createPipelineShared } from './document-pipeline.js';
import { expandSelection, toSelection } from '../utils/document-selection.js';
import {
  DEFAULT_CONCURRENCY,
  type DocumentRecord,
  type DocumentRef,
  type DocumentSelection,
  type PipelineParams,
  type PipelineShared,
} from './types.js';

export interface RunDocumentPipelineOptions {
  /** The run's options, passed as the flow's params. */
  params?: PipelineParams;
  /** Documents in flight at once. @defaultValue 8 */
  concurrency?: number;
  /** Called about every `progressIntervalMs` and once at the end with the documents done so far. */
  onProgress?: (done: number, total: number) => void;
  /** @defaultValue 100 (ms) */
  progressIntervalMs?: number;
}

export interface DocumentPipelineResult {
  /** One record per selected document, in selection order. */
  records: DocumentRecord[];
  /** The final `shared` (plain JSON). */
  shared: PipelineShared;
  /** Wall-clock time of the batch, in milliseconds. */
  elapsedMs: number;
}

/**
 * Runs the document pipeline embedded (`flow.run(shared)` in this process) over a selection (or
 * an explicit list) of documents. Progress is read off `shared.records`, which the walks fill as
 * documents finish.
 */
export async function runDocumentPipeline(
  input: DocumentSelection | DocumentRef[],
  options: RunDocumentPipelineOptions = {},
): Promise<DocumentPipelineResult> {
  const selection = toSelection(input);
  const docs = await expandSelection(selection); // the same list the batch's prep makes: for order and progress
  const flow = buildDocumentPipeline({ concurrency: options.concurrency ?? DEFAULT_CONCURRENCY });
  flow.setParams({ ...options.params });
  const shared = createPipelineShared(selection);
  const report = (): void => options.onProgress?.(Object.keys(shared.records).length, docs.length);
  const timer = options.onProgress ? setInterval(report, options.progressIntervalMs ?? 100) : undefined;
  const started = performance.now();
  try {
    await flow.run(shared);
  } finally {
    if (timer) clearInterval(timer);
  }
  const elapsedMs = performance.now() - started;
  report();
  const records = docs.map((doc) => shared.records[doc.docId]!);
  if (records.some((record) => record === undefined)) throw new Error('a selected document has no record');
  return { records, shared, elapsedMs };
}
