import { SpanStatusCode } from '@opentelemetry/api';
import { startRunSpan } from '../telemetry/tracing.js';
import type { NewRun, RunStore } from './run-store.js';
import { taskOptionsOf, type Scheduler } from './scheduler.js';

/**
 * Starts a run {@link prepareRun} has checked: writes its record and adds its first step, under
 * a span that starts the run's trace (its record carries the context every step's span joins).
 * With an idempotency key another retained run holds, starts nothing and names that run.
 *
 * @param now - the time of the start on the store's clock (epoch ms): `prepareRun` may have run
 *   before the clock was synced.
 * @returns the run's id, and whether this call created it.
 */
export async function startRun(
  store: RunStore,
  scheduler: Scheduler,
  given: NewRun,
  now: number,
): Promise<{ runId: string; created: boolean }> {
  const run = store.placeRun ? { ...given, id: store.placeRun(given) } : given;
  const started = startRunSpan(run.flow, run.id);
  try {
    const created = await store.create({
      ...run,
      now,
      ...(started.trace === undefined ? {} : { trace: started.trace }),
    });
    if (!created.created) {
      // The idempotency key named a run started before: this start started nothing.
      started.span.setAttribute('queueflow.run.id', created.runId);
      return { runId: created.runId, created: false };
    }
    try {
      await scheduler.addStep(run.id, 0, run.target, taskOptionsOf(run));
    } catch (error) {
      await store.discard(run.id).catch(() => {});
      throw error;
    }
    return { runId: run.id, created: true };
  } catch (error) {
    started.span.recordException(error as Error);
    started.span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    started.span.end();
  }
}
