import { runDocumentPipeline } from '../documents/run-document-pipeline.js';
import { warmUpPipeline } from '../documents/warm-up-pipeline.js';
import type { DocumentRecord, DocumentSelection, PipelineParams } from '../documents/types.js';
import { TRAIN_PERCENT } from '../utils/stable-split.js';
import { createProgressBar } from './progress-bar.js';

export interface RunnerOptions {
  params: PipelineParams;
  /** Documents in flight at once. */
  concurrency: number;
  progress: boolean;
  /** Documents the selection holds (for the progress bar). */
  total: number;
}

/** What a runner hands back to the CLI: records in input order, batch time, notes for the report. */
export interface RunnerResult {
  records: DocumentRecord[];
  elapsedMs: number;
  notes: string[];
}

/**
 * Runs the pipeline embedded. The NLP model and the classifier are warmed up first (the nodes
 * would build them lazily on first use anyway), so that the reported throughput is the batch's.
 */
export async function runEmbedded(selection: DocumentSelection, options: RunnerOptions): Promise<RunnerResult> {
  console.error(
    `Loading the NLP model and the spam classifier (trained on the corpus's fixed ${TRAIN_PERCENT}% train split ` +
      'on first use, about 10 s, then read from its cache)...',
  );
  const warm = await warmUpPipeline();
  const t = warm.classifier;
  const origin =
    warm.origin.from === 'cache'
      ? `read from ${warm.origin.cacheFile} in ${(warm.origin.ms / 1000).toFixed(1)} s`
      : `trained in ${(t.ms / 1000).toFixed(1)} s${warm.origin.cacheFile ? `, cached in ${warm.origin.cacheFile}` : ''}`;
  const bar = createProgressBar(options.total, options.progress);
  const result = await runDocumentPipeline(selection, {
    params: options.params,
    concurrency: options.concurrency,
    onProgress: (done, total) => bar.update(done, total),
  }).finally(() => bar.stop());
  return {
    records: result.records,
    elapsedMs: result.elapsedMs,
    notes: [
      `Engine           embedded (flow.run in one process), concurrency ${options.concurrency}`,
      `Classifier       naive Bayes, trained on ${t.spam + t.ham} emails (spam ${t.spam}, ham ${t.ham}; ` +
        `${t.vocabulary} words), ${origin}; warm-up ${(warm.ms / 1000).toFixed(1)} s, not counted below`,
    ],
  };
}
