import { LocalEngine } from '@queueflow/runtime';
import { documents } from '../documents/documents-flow.js';
import { runDocumentPipelineOnEngine } from '../documents/run-document-pipeline-on-engine.js';
import type { DocumentSelection } from '../documents/types.js';
import { warmUpPipeline } from '../documents/warm-up-pipeline.js';
import { TRAIN_PERCENT } from '../utils/stable-split.js';
import { createProgressBar } from './progress-bar.js';
import { CommandExit } from './run-command.js';
import { serveStudio } from './serve-studio.js';
import type { RunnerOptions, RunnerResult } from './run-embedded.js';

export interface StudioRunnerOptions extends RunnerOptions {
  /** Port of the studio on 127.0.0.1 (0: any free port). */
  studioPort: number;
}

/** What `--studio` hands back: the batch's result, and the studio, still open. */
export interface StudioRunnerResult extends RunnerResult {
  studioUrl: string;
  /** Closes the studio and the engine. */
  close(): Promise<void>;
}

/**
 * Runs the pipeline embedded on a `LocalEngine` (step by step in this process, every step
 * recorded) and serves queueflow studio for that engine on 127.0.0.1, so the run, its fan-out of
 * one child run per document and each step's diff can be watched in a browser while it runs and
 * looked at after. Ctrl-C while it runs cancels the run (exit 130); the studio stays open after it
 * until the caller closes it.
 */
export async function runWithStudio(
  selection: DocumentSelection,
  options: StudioRunnerOptions,
): Promise<StudioRunnerResult> {
  console.error(
    `Training the spam classifier on the corpus's fixed ${TRAIN_PERCENT}% train split (once per process, about 10 s)...`,
  );
  const warm = await warmUpPipeline();
  const engine = new LocalEngine({ flows: [documents] });
  const served = await serveStudio(engine, options.studioPort).catch(async (error: unknown) => {
    await engine.close();
    throw error;
  });
  const close = async (): Promise<void> => {
    await served.close();
    await engine.close();
  };
  const studioUrl = served.url;
  console.error(`queueflow studio: ${studioUrl}`);

  const interrupt = new AbortController();
  const onSigint = (): void => interrupt.abort();
  process.once('SIGINT', onSigint);
  const bar = createProgressBar(options.total, options.progress);
  try {
    const result = await runDocumentPipelineOnEngine(engine, selection, {
      params: options.params,
      concurrency: options.concurrency,
      signal: interrupt.signal,
      onStart: (id) => console.error(`Run ${id}: ${studioUrl}runs/${id}`),
      onProgress: (done, total) => bar.update(done, total),
    }).catch((error: unknown) => {
      if (!interrupt.signal.aborted) throw error;
      throw new CommandExit(`interrupted: ${error instanceof Error ? error.message : String(error)}`, 130);
    });
    const t = warm.classifier;
    return {
      records: result.records,
      elapsedMs: result.elapsedMs,
      studioUrl,
      close,
      notes: [
        `Engine           LocalEngine in this process, run ${result.runId}, concurrency ${options.concurrency}`,
        `Studio           ${studioUrl}runs/${result.runId}`,
        `Classifier       naive Bayes, trained on ${t.spam + t.ham} emails (spam ${t.spam}, ham ${t.ham}; ` +
          `${t.vocabulary} words) in ${(t.ms / 1000).toFixed(1)} s; warm-up ${(warm.ms / 1000).toFixed(1)} s, not counted below`,
      ],
    };
  } catch (error) {
    await close();
    throw error;
  } finally {
    bar.stop();
    process.off('SIGINT', onSigint);
  }
}
