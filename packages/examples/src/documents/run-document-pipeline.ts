import { buildDocumentPipeline, createPipelineShared, DEFAULT_CONCURRENCY } from './document-pipeline.js';
import type { DocumentRecord, DocumentRef, PipelineParams, PipelineShared } from './types.js';

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
  /** One record per document, in the order of `docs`. */
  records: DocumentRecord[];
  /** The final `shared` (plain JSON). */
  shared: PipelineShared;
  /** Wall-clock time of the batch, in milliseconds. */
  elapsedMs: number;
}

/**
 * Runs the document pipeline embedded (`flow.run(shared)` in this process) over `docs`.
 * Progress is read off `shared.records`, which the walks fill as documents finish.
 */
export async function runDocumentPipeline(
  docs: DocumentRef[],
  options: RunDocumentPipelineOptions = {},
): Promise<DocumentPipelineResult> {
  const flow = buildDocumentPipeline({ concurrency: options.concurrency ?? DEFAULT_CONCURRENCY });
  flow.setParams({ ...options.params });
  const shared = createPipelineShared(docs);
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
  return { records, shared, elapsedMs };
}
