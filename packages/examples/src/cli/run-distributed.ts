import { RedisEngine } from '@queueflow/worker';
import { documents } from '../documents/documents-flow.js';
import { runDocumentPipelineOnEngine } from '../documents/run-document-pipeline-on-engine.js';
import type { DocumentSelection } from '../documents/types.js';
import { budgetNote } from './budget-note.js';
import { createProgressBar, type Progress } from './progress-bar.js';
import { redactUrl } from './redact-url.js';
import { CommandExit } from './run-command.js';
import type { RunnerOptions, RunnerResult } from './run-embedded.js';

export interface DistributedRunnerOptions extends RunnerOptions {
  /** The Redis the workers use (`redis://` or `rediss://`). */
  redisUrl: string;
  /** The key prefix the workers use. */
  prefix: string;
}

/** How long a run may stay queued before the CLI says that no worker seems to take its steps. */
const NO_WORKER_HINT_MS = 10_000;

/**
 * Runs the pipeline on `RedisEngine`: this process only starts the run and follows it; the
 * steps run on the workers started with `queueflow worker --flows packages/examples/dist/flows.js`
 * on the same Redis and prefix, which make their own NLP model and classifier at their first
 * document (the classifier from its cache file when one is there). The progress bar counts the documents done across all workers. Ctrl-C (or
 * SIGTERM) cancels the run (its documents in flight stop at their next step), waits until the
 * cancel is sent, closes the engine and fails with {@link CommandExit} `interrupted: run <id>
 * cancelled`, exit code 130 (143 for SIGTERM).
 */
export async function runDistributed(
  selection: DocumentSelection,
  options: DistributedRunnerOptions,
): Promise<RunnerResult> {
  const engine = new RedisEngine({ connection: options.redisUrl, flows: [documents], prefix: options.prefix });
  const where = `${redactUrl(options.redisUrl)}, prefix ${options.prefix}`;
  let bar: Progress | undefined;
  let hinted = false;
  const started = Date.now();
  const interrupt = new AbortController();
  // SIGTERM (kill, a CI timeout, docker stop) does what Ctrl-C does: the run is cancelled, not left
  // running on the workers. Exit code 128 + the signal's number, as a shell reports it.
  let exitCode = 130;
  const onSignal = (signal: NodeJS.Signals): void => {
    exitCode = signal === 'SIGTERM' ? 143 : 130;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    bar?.stop();
    if (!bar && process.stderr.isTTY && signal === 'SIGINT') process.stderr.write('\n'); // past the terminal's ^C
    interrupt.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const result = await runDocumentPipelineOnEngine(engine, selection, {
      params: options.params,
      concurrency: options.concurrency,
      signal: interrupt.signal,
      onStart: (id) => {
        console.error(`Run ${id} started on ${where}; waiting for workers...`);
      },
      onProgress: (done, total, info, budgets) => {
        if (interrupt.signal.aborted) return;
        if (!bar && info?.status === 'waiting') bar = createProgressBar(total, options.progress);
        if (bar) {
          bar.update(done, total, budgets ? budgetNote(budgets) : '');
        } else if (!hinted && info?.status === 'queued' && Date.now() - started > NO_WORKER_HINT_MS) {
          hinted = true;
          console.error(
            `No worker has taken the run's first step after ${NO_WORKER_HINT_MS / 1000} s. Start some with\n` +
              `  npx queueflow worker --flows packages/examples/dist/flows.js --redis ${redactUrl(options.redisUrl)} --prefix '${options.prefix}'\n` +
              '(from the repository root, after npm run build); the run waits for them.',
          );
        }
      },
    })
      .catch((error: unknown) => {
        if (!interrupt.signal.aborted) throw error;
        throw new CommandExit(`interrupted: ${error instanceof Error ? error.message : String(error)}`, exitCode);
      })
      .finally(() => bar?.stop());
    const conflicts =
      result.conflicts.length === 0
        ? 'none'
        : `${result.conflicts.length} (paths two documents both wrote; see queueflow status ${result.runId})`;
    return {
      records: result.records,
      elapsedMs: result.elapsedMs,
      notes: [
        `Engine           RedisEngine on ${where}, run ${result.runId}; up to ${options.concurrency} documents in flight across the workers`,
        "Classifier       naive Bayes on the same fixed split, made by each worker at its first document (read from the workers' cache, or trained and cached: counted below)",
        `Waiting          ${(result.queuedMs / 1000).toFixed(1)} s for a worker to take the run's first step (not counted below)`,
        `Merge conflicts  ${conflicts}`,
      ],
    };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await engine.close();
  }
}
