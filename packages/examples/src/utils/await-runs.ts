import { QueueflowError, type Engine, type RunHandle, type RunResult } from '@queueflow/runtime';

/** The results of a tuple of run handles, each with its own `shared` type. */
export type ResultsOf<T extends readonly RunHandle<object>[]> = {
  -readonly [K in keyof T]: Awaited<ReturnType<T[K]['result']>>;
};

/**
 * The results of `runs`, in order, as `Promise.all(runs.map((run) => run.result()))`; but when
 * `signal` aborts before every run has ended, it cancels them all (`engine.cancel`; a run that has
 * ended is left as it is) and rejects once the cancels have been sent. A caller that closes the
 * engine after it never cuts a cancel short.
 *
 * @throws QueueflowError `RUN_CANCELLED` (`run <id> cancelled`) after an abort, its `cause` the
 *   signal's reason; Error `could not cancel run <id>: <reason>` when a cancel fails.
 * @example
 * ```ts
 * const interrupt = new AbortController();
 * process.once('SIGINT', () => interrupt.abort());
 * const [result] = await awaitRuns(engine, [await engine.start(flow, shared)], interrupt.signal);
 * ```
 */
export async function awaitRuns<const T extends readonly RunHandle<object>[]>(
  engine: Pick<Engine, 'cancel'>,
  runs: T,
  signal?: AbortSignal,
): Promise<ResultsOf<T>> {
  const results = Promise.all(runs.map((run) => run.result())) as Promise<RunResult<object>[]> as Promise<ResultsOf<T>>;
  if (!signal) return results;
  let onAbort = (): void => {};
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const first = await Promise.race([results, aborted]);
    if (first !== 'aborted') return first;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  const ids = runs.map((run) => run.id);
  const cancels = await Promise.allSettled(ids.map((id) => engine.cancel(id)));
  for (const [i, cancel] of cancels.entries()) {
    if (cancel.status === 'rejected') {
      const reason = cancel.reason instanceof Error ? cancel.reason.message : String(cancel.reason);
      throw new Error(`could not cancel run ${ids[i]}: ${reason}`, { cause: cancel.reason });
    }
  }
  throw new QueueflowError('RUN_CANCELLED', `${ids.length === 1 ? 'run' : 'runs'} ${ids.join(' and ')} cancelled`, {
    cause: signal.reason,
  });
}
