export {
  buildDocumentPipeline,
  createPipelineShared,
  type DocumentPipelineOptions,
} from './documents/document-pipeline.js';
export { DocumentBatchFlow } from './documents/document-batch-flow.js';
export { ParseDocument } from './documents/parse-document.js';
export { CleanDocument } from './documents/clean-document.js';
export { AnalyseDocument } from './documents/analyse-document.js';
export { SummariseDocument } from './documents/summarise-document.js';
export { ClassifyDocument } from './documents/classify-document.js';
export { RecordDocument } from './documents/record-document.js';
export { DocumentStage, FAIL, type StageResult } from './documents/document-stage.js';
export { DocumentError, toFailure } from './documents/document-error.js';
export { buildRecord } from './documents/document-record.js';
export {
  runDocumentPipeline,
  type RunDocumentPipelineOptions,
  type DocumentPipelineResult,
} from './documents/run-document-pipeline.js';
export { documents } from './documents/documents-flow.js';
export {
  runDocumentPipelineOnEngine,
  type RunOnEngineOptions,
  type EngineRunResult,
} from './documents/run-document-pipeline-on-engine.js';
export { warmUpPipeline, type PipelineWarmUp } from './documents/warm-up-pipeline.js';
export {
  DEFAULT_CONCURRENCY,
  DEFAULT_PIPELINE_PARAMS,
  type BatchParams,
  type DocumentFailure,
  type DocumentKind,
  type DocumentParams,
  type DocumentRecord,
  type DocumentRef,
  type DocumentSelection,
  type DocumentSource,
  type FailureCode,
  type LanguageStats,
  type PipelineParams,
  type PipelineShared,
  type SpamLabel,
  type StageName,
  type StageTimings,
  type WorkItem,
} from './documents/types.js';
export {
  listCorpus,
  sampleCorpus,
  corpusDataDir,
  corpusFilePath,
  DEFAULT_SAMPLE_SIZE,
} from './utils/spam-assassin-corpus.js';
export { listLocalFiles } from './utils/local-files.js';
export { expandSelection, toSelection } from './utils/document-selection.js';
export { splitOf, stableHash, TRAIN_PERCENT } from './utils/stable-split.js';
export {
  getSpamClassifier,
  loadSpamClassifier,
  classifierFeatures,
  type SpamClassifier,
  type SpamClassifierOptions,
  type SpamPrediction,
  type TrainingFigures,
} from './utils/spam-classifier.js';
export { defaultClassifierCacheDir } from './utils/classifier-cache.js';
export { getNlp, getTokenizer } from './utils/nlp.js';
export { llmConfigFromEnv, type LlmConfig } from './utils/llm-client.js';
export { llmSummary } from './utils/llm-summary.js';
export { buildReport, type PipelineReport, type HeldOutScores } from './report/pipeline-report.js';
export { formatReport, type ReportContext } from './report/format-report.js';
export { writeJsonl } from './report/jsonl.js';
export { tabooHinter, DEFAULT_TURN_TIMEOUT_MS, type HinterPlan, type HinterMove } from './taboo/hinter-agent.js';
export { tabooGuesser, type GuesserPlan, type GuesserMove } from './taboo/guesser-agent.js';
export { playTaboo, formatTranscript, type PlayTabooOptions, type TabooGame } from './taboo/play-taboo.js';
export { TABOO_DECK, cardsFor } from './taboo/taboo-deck.js';
export { ruleBasedHint, ruleBasedGuess } from './taboo/rule-based-players.js';
export { breaksTaboo, isRightGuess } from './taboo/taboo-rules.js';
export { parseExecTrace, type ExecTraceLine } from './taboo/exec-trace.js';
export { llmHint, llmGuess } from './utils/llm-taboo.js';
export type {
  Card,
  EndReason,
  GuesserEntry,
  GuesserState,
  HinterState,
  PlayerSettings,
  Players,
  TabooSaid,
  Source,
  ToGuesser,
  ToHinter,
  TranscriptEntry,
} from './taboo/types.js';
export { MockModelServer, type MockModelQuota, type MockModelStats } from './llm/mock-model-server.js';
export {
  llmLimits,
  llmLimitsFromEnv,
  quotaFromEnv,
  DEFAULT_LLM_QUOTA,
  LLM_BUDGET_KEY,
  type LlmQuota,
} from './llm/llm-limits.js';
export { retryAfterMsOf } from './llm/retry-after.js';
export {
  deskAgents,
  scriptedReviewer,
  type ThreadState,
  type SenderState,
  type ListState,
  type ModeratorState,
} from './desk/desk-agents.js';
export { readCorpusMails, listKeyOf, type DeskMail } from './desk/desk-mail.js';
export { deskSample, DESK_SAMPLE_SIZE } from './desk/desk-sample.js';
export { MailThreads, threadKeyOf, normalSubject, type ThreadHeaders } from './desk/mail-threads.js';
export { runDesk, type DeskOptions, type DeskResult, type KeyedState } from './desk/run-desk.js';
