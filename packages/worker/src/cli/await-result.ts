import { DEFAULT_QUEUE, type RunResult } from '@queueflow/runtime';
import type { RedisEngine } from '../redis-engine.js';
import { prefixHint } from './options.js';

/** How long a run may sit queued before `run`/`wait` say that no worker has taken it, in ms. */
const QUEUED_HINT_MS = 10_000;

/**
 * The run's result, as `engine.result`, and meanwhile: a hint on stderr when the run is still
 * queued after {@link QUEUED_HINT_MS} (no worker, or workers refusing it: their reason is shown),
 * and on Ctrl-C a word that the run goes on (exit 130). `options.announce`, a line for stderr
 * (`run <id> started`), is written once Ctrl-C is handled: whoever reads it and presses Ctrl-C
 * at once must not kill the command before it has said how to cancel the run.
 *
 * @throws QueueflowError RESULT_TIMEOUT after `timeoutMs`.
 */
export async function awaitResult(
  engine: Pick<RedisEngine, 'get' | 'result'>,
  runId: string,
  options: { flows?: string; prefix: string; announce?: string },
  timeoutMs?: number,
): Promise<RunResult> {
  let said = '';
  const hint = setInterval(() => {
    // Not awaited: a hint on a timer, independent of the wait below.
    void engine.get(runId).then(
      (info) => {
        if (info?.status !== 'queued') return;
        const start = `queueflow worker --flows ${options.flows ?? '<module>'} --prefix '${options.prefix}'`;
        const message = info.refusal
          ? `run ${runId} is still queued: a worker refused its step: ${info.refusal}`
          : info.noWorker && info.queue !== DEFAULT_QUEUE
            ? `run ${runId} is still queued: ${info.noWorker}`
            : `run ${runId} is still queued: no worker has taken it yet. Is one running? Start one with: ${start}`;
        if (message !== said) console.error((said = message));
      },
      () => {}, // a failed poll says nothing; the wait itself reports real trouble
    );
  }, QUEUED_HINT_MS);
  const interrupted = (): void => {
    console.error(
      `\ninterrupted: run ${runId} goes on without this command; \`queueflow cancel ${runId}${prefixHint(options.prefix)}\` stops it`,
    );
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  if (options.announce !== undefined) console.error(options.announce);
  try {
    return await engine.result(runId, timeoutMs === undefined ? {} : { timeoutMs });
  } finally {
    clearInterval(hint);
    process.off('SIGINT', interrupted);
  }
}
