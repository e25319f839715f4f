import { SpanStatusCode } from '@opentelemetry/api';
import { startRunSpan } from '../telemetry/tracing.js';
import type { NewRun, RunStore } from './run-store.js';
import type { StepTarget } from '../interpreter/step-types.js';
import { taskOptionsOf, type Scheduler, type TaskOptions } from './scheduler.js';

/** First steps a caller of {@link startRun} adds later, all at once ({@link addFirstSteps}). */
export type FirstSteps = { runId: string; target: StepTarget; options: TaskOptions }[];

/**
 * Starts a run {@link prepareRun} has checked: writes its record and adds its first step, under
 * a span that starts the run's trace (its record carries the context every step's span joins).
 * With an idempotency key another retained run holds, starts nothing and names that run.
 *
 * @param now - the time of the start on the store's clock (epoch ms): `prepareRun` may have run
 *   before the clock was synced.
 * @param firstSteps - where to leave the first step for the caller to add (with others, in bulk),
 *   instead of adding it here; a run left without it is the caller's to mend.
 * @returns the run's id, and whether this call created it.
 */
export async function startRun(
  store: RunStore,
  scheduler: Scheduler,
  given: NewRun,
  now: number,
  firstSteps?: FirstSteps,
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
    if (firstSteps) {
      firstSteps.push({ runId: run.id, target: run.target, options: taskOptionsOf(run) });
      return { runId: run.id, created: true };
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

/** Adds `firstSteps`, those of one target and options in one bulk add each. */
export async function addFirstSteps(scheduler: Scheduler, firstSteps: FirstSteps): Promise<void> {
  const groups = new Map<string, FirstSteps>();
  for (const step of firstSteps) {
    const key = JSON.stringify([step.target, step.options]);
    const group = groups.get(key);
    if (group) group.push(step);
    else groups.set(key, [step]);
  }
  await Promise.all(
    [...groups.values()].map((group) =>
      scheduler.addFirstSteps(
        group.map((step) => step.runId),
        group[0]!.target,
        group[0]!.options,
      ),
    ),
  );
}
