import { setTimeout as sleep } from 'node:timers/promises';
import { QueueflowError, type BudgetInfo, type Engine, type MergeConflict, type RunInfo } from '@queueflow/runtime';
import { createPipelineShared } from './document-pipeline.js';
import { documents } from './documents-flow.js';
import { awaitRuns } from '../utils/await-runs.js';
import { expandSelection, toSelection } from '../utils/document-selection.js';
import type { DocumentPipelineResult } from './run-document-pipeline.js';
import {
  DEFAULT_CONCURRENCY,
  type BatchParams,
  type DocumentRef,
  type DocumentSelection,
  type PipelineParams,
  type PipelineShared,
} from './types.js';

export interface RunOnEngineOptions {
  /** The run's options, passed as the flow's params. */
  params?: PipelineParams;
  /**
   * Documents in flight at once, across every process that takes the engine's steps (the run's
   * `concurrency` param). @defaultValue 8
   */
  concurrency?: number;
  /**
   * Called about every `progressIntervalMs` with the documents done so far (the fan-out's ended
   * children while the batch runs), the run's record and, while its children run, the
   * deployment's budgets (flow control: which hold runs back), and once at the end.
   */
  onProgress?: (done: number, total: number, info: RunInfo | undefined, budgets?: BudgetInfo[]) => void;
  /** @defaultValue 250 (ms) */
  progressIntervalMs?: number;
  /** Called with the run's id once it has started (to cancel it, or to inspect it with `queueflow status`). */
  onStart?: (runId: string) => void;
  /**
   * Aborting it cancels the run (its documents in flight stop at their next step) and rejects
   * once the cancel has been sent (e.g. on Ctrl-C), so the engine may be closed right after.
   */
  signal?: AbortSignal;
}

export interface EngineRunResult extends DocumentPipelineResult {
  runId: string;
  /**
   * How long the run waited for a worker to take its first step, in milliseconds (from the run's
   * record: created by the client, started by a worker; their clocks may differ a little).
   */
  queuedMs: number;
  /** Paths two documents both wrote (none expected: each writes only its own record). */
  conflicts: MergeConflict[];
}

/**
 * Runs the document pipeline as a run of the registered flow {@link documents} on an engine: a
 * `RedisEngine` (the steps run on `queueflow worker` processes) or a `LocalEngine`. Progress is
 * polled from the run's record, whose `children` count the documents whose walk has ended while
 * the batch waits on its fan-out. The records come from the run's final `shared`, in selection
 * order, as `runDocumentPipeline` gives them embedded.
 *
 * `elapsedMs` is the run's time as the client sees it once a worker has taken its first step
 * (`queuedMs`, the wait for a worker, apart): the fan-out, every document, the merge of their
 * records and the transfer of the final `shared`.
 *
 * @throws Error when the run does not complete, or a selected document has no record;
 *   QueueflowError `RUN_CANCELLED` when `signal` aborts (see {@link awaitRuns}).
 */
export async function runDocumentPipelineOnEngine(
  engine: Engine,
  input: DocumentSelection | DocumentRef[],
  options: RunOnEngineOptions = {},
): Promise<EngineRunResult> {
  const selection = toSelection(input);
  const docs = await expandSelection(selection); // the same list the batch's prep makes: for order and progress
  const params: BatchParams = { ...options.params, concurrency: options.concurrency ?? DEFAULT_CONCURRENCY };
  if (options.signal?.aborted) {
    throw new QueueflowError('RUN_CANCELLED', 'the document pipeline was cancelled before its run started', {
      cause: options.signal.reason,
    });
  }
  const started = performance.now();
  const handle = await engine.start(documents, createPipelineShared(selection), { params });
  options.onStart?.(handle.id);

  const stopPolling = new AbortController();
  const poll = async (): Promise<void> => {
    let done = 0;
    while (!stopPolling.signal.aborted) {
      const info = await engine.get(handle.id).catch(() => undefined);
      if (stopPolling.signal.aborted) return;
      done = Math.max(done, documentsDone(info, docs.length)); // never backwards, whatever a read missed
      const budgets = info?.children ? await engine.budgets().catch(() => undefined) : undefined;
      if (stopPolling.signal.aborted) return;
      options.onProgress?.(done, docs.length, info, budgets);
      await sleep(options.progressIntervalMs ?? 250, undefined, { signal: stopPolling.signal }).catch(() => {});
    }
  };
  const polling = options.onProgress ? poll() : Promise.resolve();
  let result;
  try {
    [result] = await awaitRuns(engine, [handle], options.signal);
  } finally {
    stopPolling.abort();
    await polling;
  }
  const totalMs = performance.now() - started;
  if (result.status !== 'completed') {
    const why = result.error ? `: ${result.error.code ? `${result.error.code} ` : ''}${result.error.message}` : '';
    throw new Error(`run ${handle.id} of the document pipeline ${result.status}${why}`);
  }
  const shared = result.shared as PipelineShared;
  const records = docs.map((doc) => shared.records[doc.docId]!);
  const missing = docs.filter((doc) => shared.records[doc.docId] === undefined);
  if (missing.length > 0) {
    throw new Error(
      `run ${handle.id}: ${missing.length} selected documents have no record (first: ${missing[0]!.docId})`,
    );
  }
  options.onProgress?.(docs.length, docs.length, undefined);
  const info = await engine.get(handle.id);
  const queuedMs = info?.startedAt === undefined ? 0 : Math.min(totalMs, Math.max(0, info.startedAt - info.createdAt));
  return {
    runId: handle.id,
    records,
    shared,
    elapsedMs: totalMs - queuedMs,
    queuedMs,
    conflicts: info?.conflicts ?? [],
  };
}

/** Documents done according to a run's record: its ended children while it waits on them. */
function documentsDone(info: RunInfo | undefined, total: number): number {
  if (!info) return 0;
  if (info.status === 'completed') return total;
  return info.children?.ended ?? 0;
}
