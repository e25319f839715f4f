/**
 * The data of the document pipeline. Everything here is plain JSON (objects, arrays, strings,
 * numbers, booleans, null), because on the distributed engines `shared` and params cross Redis.
 * The shapes are type aliases, not interfaces: only those are assignable to the runtime's
 * `JsonObject` and params types (an interface has no implicit index signature).
 */

/** A spam/ham label of the SpamAssassin corpus. */
export type SpamLabel = 'spam' | 'ham';

/** How a document's bytes are read: as a raw RFC 5322 email, or as plain (or Markdown) text. */
export type DocumentKind = 'email' | 'text' | 'markdown';

/** Where a document comes from. */
export type DocumentSource = 'spam-assassin' | 'file';

/**
 * A reference to one document: what `shared.docs` holds and what each parameter set of the
 * batch carries. The document's bytes are read by the first node of its flow, never stored here.
 */
export type DocumentRef = {
  /** Unique id within a run, e.g. `spam-2/00123` or `notes/todo.md`. */
  docId: string;
  source: DocumentSource;
  /**
   * For `spam-assassin`: the path inside the corpus package's `data` folder (resolved on the
   * process that reads it); for `file`: an absolute path, which every worker must be able to read.
   */
  path: string;
  kind: DocumentKind;
  /** The corpus label, `null` when unknown (the user's own files). */
  trueLabel: SpamLabel | null;
  /** Which side of the fixed train/test split the document is on, `null` outside the corpus. */
  split: 'train' | 'test' | null;
};

/** Why a document failed. */
export type FailureCode =
  'EMPTY' | 'BINARY' | 'TOO_LARGE' | 'TRUNCATED' | 'MALFORMED' | 'NO_TEXT' | 'UNREADABLE' | 'ERROR';

/** The stages of the per-document flow, in order. */
export type StageName = 'parse' | 'clean' | 'analyse' | 'summarise' | 'classify' | 'record';

/** A document's failure: the stage that gave up, a stable code and a reason for people. */
export type DocumentFailure = {
  stage: StageName | 'batch';
  code: FailureCode;
  reason: string;
};

/** Text statistics computed by wink-nlp on the cleaned text. */
export type LanguageStats = {
  /** Characters of cleaned text analysed (capped, see `PipelineParams.maxAnalyseChars`). */
  characters: number;
  tokens: number;
  words: number;
  sentences: number;
  /** Distinct lower-cased words over all words, 0 to 1, rounded to 3 decimals. */
  lexicalDiversity: number;
  wordsPerSentence: number;
  urls: number;
  emails: number;
  numbers: number;
  /** Flesch reading-ease score from wink-nlp's readability stats, rounded to 1 decimal. */
  readingEase: number;
  readingTimeSecs: number;
};

/** Per-stage time of one document, in milliseconds (not deterministic: leave out of comparisons). */
export type StageTimings = Partial<Record<Exclude<StageName, 'record'>, number>> & { total: number };

/** One line of the JSONL output. */
export type DocumentRecord = {
  id: string;
  source: DocumentSource;
  path: string;
  kind: DocumentKind;
  status: 'ok' | 'failed';
  bytes: number | null;
  subject: string | null;
  /** Lower-cased domain of the From address, `null` when there is none. */
  senderDomain: string | null;
  /** The Date header as ISO 8601 when it parses, else as written; `null` when absent. */
  date: string | null;
  language: LanguageStats | null;
  keywords: string[];
  summary: string | null;
  summarySource: 'extractive' | 'llm' | null;
  predictedLabel: SpamLabel | null;
  /** log2 odds of spam over ham from the classifier (positive: spam). */
  spamScore: number | null;
  trueLabel: SpamLabel | null;
  split: 'train' | 'test' | null;
  failure: DocumentFailure | null;
  /** Things that went wrong without failing the document (e.g. text cut for analysis). */
  warnings: string[];
  timingMs: StageTimings;
};

/** What the stages hand each other through `shared.work[docId]`; removed by the record stage. */
export type WorkItem = {
  bytes: number | null;
  subject: string | null;
  senderDomain: string | null;
  date: string | null;
  /** Plain-text body as parsed (email text part, or the file's text). */
  plainText: string | null;
  /** HTML body, when the email has one. */
  html: string | null;
  /** The cleaned text that analysis and classification read. */
  text: string | null;
  language: LanguageStats | null;
  keywords: string[];
  summary: string | null;
  summarySource: 'extractive' | 'llm' | null;
  predictedLabel: SpamLabel | null;
  spamScore: number | null;
  failure: DocumentFailure | null;
  warnings: string[];
  timingMs: Partial<Record<StageName, number>>;
};

/**
 * Which documents a run processes. The batch's `prep` expands it into {@link DocumentRef}s, one
 * parameter set each, so that `shared` stays small: on the engines every fan-out child starts
 * from a copy of the parent's `shared`, and a list of thousands of references there would be
 * copied into every child (and every step of it).
 *
 * - `spam-assassin`: the corpus; `limit` documents of its fixed sample, or all when `null`;
 * - `files`: the `.eml`, `.txt` and `.md` files under `dir` (an absolute path every worker can
 *   read), the first `limit` by path, or all when `null`;
 * - `refs`: an explicit list, for small batches (it is carried in `shared`).
 */
export type DocumentSelection =
  | { source: 'spam-assassin'; limit: number | null }
  | { source: 'files'; dir: string; limit: number | null }
  | { source: 'refs'; refs: DocumentRef[] };

/** The pipeline's `shared` store. */
export type PipelineShared = {
  /** The documents to process, in output order. */
  input: DocumentSelection;
  /** Transient per-document data between stages, keyed by doc id. */
  work: Record<string, WorkItem>;
  /** Results, keyed by doc id: each parameter set writes only its own key. */
  records: Record<string, DocumentRecord>;
};

/**
 * Options of a pipeline run, passed as the flow's params (merged into every parameter set).
 * All optional; the defaults are in {@link DEFAULT_PIPELINE_PARAMS}.
 */
export type PipelineParams = {
  /** Larger files fail with `TOO_LARGE` without being read. @defaultValue 1 MiB (bytes) */
  maxBytes?: number;
  /** Text kept between stages per document; more is cut with a warning. @defaultValue 100000 (chars) */
  maxTextChars?: number;
  /** Text analysed by wink-nlp per document. @defaultValue 20000 (chars) */
  maxAnalyseChars?: number;
  /** Keywords per record. @defaultValue 8 */
  keywordCount?: number;
  /** Sentences in the extractive summary. @defaultValue 2 */
  summarySentences?: number;
  /** Ask the configured OpenAI-compatible endpoint for a summary. @defaultValue false */
  llmSummary?: boolean;
};

/**
 * The params of a whole run: the {@link PipelineParams} plus the batch's limit. The batch passes
 * them on to every per-document walk (`concurrency` there is unused).
 */
export type BatchParams = PipelineParams & {
  /**
   * Documents in flight at once in this run, overriding the limit the flow was built with. On the
   * engines this is the number of child runs in flight across all workers, so a client chooses it
   * per run: the workers all build the same graph. @defaultValue the flow's `concurrency`
   */
  concurrency?: number;
};

/** The params a per-document walk sees: the run's options plus its {@link DocumentRef}. */
export type DocumentParams = PipelineParams & DocumentRef;

/**
 * Default number of documents in flight at once. Here, with the other defaults, rather than with
 * the pipeline: the command line shows it in its help without loading the pipeline's stages.
 */
export const DEFAULT_CONCURRENCY = 8;

export const DEFAULT_PIPELINE_PARAMS: Required<PipelineParams> = {
  maxBytes: 1024 * 1024,
  maxTextChars: 100_000,
  maxAnalyseChars: 20_000,
  keywordCount: 8,
  summarySentences: 2,
  llmSummary: false,
};
