import { Flow } from '@queueflow/runtime';
import { AnalyseDocument } from './analyse-document.js';
import { ClassifyDocument } from './classify-document.js';
import { CleanDocument } from './clean-document.js';
import { DocumentBatchFlow } from './document-batch-flow.js';
import { FAIL } from './document-stage.js';
import { ParseDocument } from './parse-document.js';
import { RecordDocument } from './record-document.js';
import { SummariseDocument, summaryCallsModel } from './summarise-document.js';
import { toSelection } from '../utils/document-selection.js';
import { llmLimitsFromEnv } from '../llm/llm-limits.js';
import { DEFAULT_CONCURRENCY, type DocumentRef, type DocumentSelection, type PipelineShared } from './types.js';

/** Options of {@link buildDocumentPipeline}: plain data, so a worker can build the same graph. */
export interface DocumentPipelineOptions {
  /** Documents in flight at once. @defaultValue 8 */
  concurrency?: number;
}

/**
 * Builds the document pipeline: a {@link DocumentBatchFlow} over the documents `shared.input`
 * selects, whose walk, per
 * document, is
 *
 * ```
 * parse → clean → analyse → summarise → classify → record
 *   └──────┴───────┴──────────┴───────────┴── "fail" ──→ record
 * ```
 *
 * Every node has a stable name. The function takes no runtime objects: clients and workers call
 * it to get the same graph (`defineFlow('documents', buildDocumentPipeline)`). Nodes reach their
 * expensive resources (wink-nlp, the classifier) through lazily built per-process caches.
 *
 * @example
 * ```ts
 * const flow = buildDocumentPipeline({ concurrency: 8 });
 * const shared = createPipelineShared({ source: 'spam-assassin', limit: 100 });
 * await flow.run(shared);
 * console.log(Object.values(shared.records));
 * ```
 */
export function buildDocumentPipeline(options: DocumentPipelineOptions = {}): DocumentBatchFlow {
  const limits = llmLimitsFromEnv();
  const parse = new ParseDocument({ name: 'parse', maxRetries: 2, wait: 0.05 });
  const clean = new CleanDocument({ name: 'clean' });
  const analyse = new AnalyseDocument({ name: 'analyse' });
  const summarise = new SummariseDocument({
    name: 'summarise',
    maxRetries: 3,
    wait: 1,
    backoff: { type: 'exponential', jitter: 0.2, maxDelayMs: 10_000 },
    timeoutMs: 30_000,
    // Flow control: every worker's model calls share one budget (QF_LLM_QUOTA, default 60 a
    // minute, 2 at once); a 429 the provider still sends holds the budget back (RateLimitedError).
    // Only tries that call the model draw from it: without --llm no document waits for it.
    ...(limits ? { limits: limits.map((limit) => ({ ...limit, when: summaryCallsModel })) } : {}),
  });
  const classify = new ClassifyDocument({ name: 'classify', maxRetries: 2, wait: 0.1 });
  const record = new RecordDocument({ name: 'record' });

  parse.next(clean).next(analyse).next(summarise).next(classify).next(record);
  for (const stage of [parse, clean, analyse, summarise, classify]) stage.on(FAIL, record);

  const perDocument = new Flow<PipelineShared>(parse, { name: 'document' });
  return new DocumentBatchFlow(perDocument, {
    name: 'documents',
    concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
    onItemError: 'collect',
  });
}

/** A fresh `shared` for the pipeline over a selection (or an explicit list) of documents. */
export function createPipelineShared(input: DocumentSelection | DocumentRef[]): PipelineShared {
  return { input: toSelection(input), work: {}, records: {} };
}
