import { getNlp, getTokenizer } from '../utils/nlp.js';
import { getSpamClassifier, type SpamClassifier } from '../utils/spam-classifier.js';

/** What warming up took: the classifier's training figures and the whole warm-up's time. */
export interface PipelineWarmUp {
  classifier: SpamClassifier['trainedOn'];
  /** Wall-clock time of this call, in milliseconds (near 0 once the process is warm). */
  ms: number;
}

/**
 * Builds the per-process resources the pipeline's nodes share, so that no step pays for them:
 * the two wink-nlp instances (the English model, about a second) and the spam classifier
 * (trained on the corpus's fixed train split, 6 to 10 s of CPU). The nodes would build them
 * lazily on first use anyway; warming up first keeps that time out of the batch's throughput
 * and, on a worker, out of any step (see `src/flows.ts`). Idempotent: a warm process returns at
 * once; concurrent callers share one training.
 */
export async function warmUpPipeline(): Promise<PipelineWarmUp> {
  const started = performance.now();
  getNlp();
  getTokenizer();
  const classifier = await getSpamClassifier();
  return { classifier: classifier.trainedOn, ms: performance.now() - started };
}
