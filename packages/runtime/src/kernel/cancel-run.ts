import { childRunId, isFinal, type CancelResult, type RunStore } from './run-store.js';
import { taskOptionsOf, type Scheduler } from './scheduler.js';
import { recordRunEnd } from '../telemetry/tracing.js';

/** Children cancelled at once when a fan-out ends early (each batch runs concurrently). */
const CANCEL_BATCH = 100;

/**
 * Cancels a run now and what hangs on it: its status becomes `cancelled` and nothing it does later
 * commits (a step in flight is aborted through the store's `cancelled` event and stops at its step
 * boundary); a fan-out's children are cancelled too, and theirs in turn; a cancelled child's
 * parent hears of it.
 */
export async function cancelRun(store: RunStore, scheduler: Scheduler, runId: string): Promise<CancelResult> {
  const { result, wakes } = await store.cancel(runId);
  await scheduler.promote(wakes);
  if (result === 'missing' || result === 'ended') return result;
  const run = await store.load(runId);
  if (!run) return result;
  if (result === 'cancelled-waiting') await cancelChildren(store, scheduler, runId, run.step);
  // A cancelled fan-out child must be reported to its parent: the driver that takes its step
  // finds it ended and does that (the task may exist already; the add is then a no-op).
  if (run.parent) await scheduler.addStep(runId, run.step, run.target, taskOptionsOf(run));
  return result;
}

/**
 * Cancels the child runs of the fan-out `parentId` made at `parentStep`, and theirs in turn. Item
 * children need nothing: their tasks find the parent ended and stop. The store keeps the cascade
 * recorded until it is done (RunStore.cascadesDue), its time renewed after each batch, its
 * `ancestors`' too (the cascades this one is part of): should this process die in the middle, a
 * worker finishes it ({@link resumeCascades}). A cascade whose record is gone (the parent was
 * reopened since, engine.retry) stops. Idempotent: a child cancelled already is left alone.
 */
export async function cancelChildren(
  store: RunStore,
  scheduler: Scheduler,
  parentId: string,
  parentStep: number,
  ancestors: readonly string[] = [],
): Promise<void> {
  const fanOut = await store.fanOutOf(parentId);
  if (fanOut && fanOut.step === parentStep && fanOut.request.kind === 'runs') {
    // Only the children started have records (see RunStore.createChildren).
    for (let first = 0; first < fanOut.started; first += CANCEL_BATCH) {
      if ((await store.cascadeProgress?.(parentId, false)) === false) return;
      await Promise.all(ancestors.map((id) => store.cascadeProgress?.(id, false)));
      const ids = Array.from({ length: Math.min(CANCEL_BATCH, fanOut.started - first) }, (_, i) =>
        childRunId(parentId, parentStep, first + i),
      );
      const cancelled = await Promise.all(ids.map((id) => cancelChild(store, scheduler, id, [parentId, ...ancestors])));
      // Traced (the fan-out step had a trace context): each cancelled child's run span ends here.
      const trace = fanOut.request.trace;
      if (trace === undefined) continue;
      const runs = await store.summaries(ids.filter((_, i) => cancelled[i]));
      for (const run of runs) if (run) recordRunEnd({ ...run, trace }, 'cancelled', run.finishedAt ?? run.updatedAt);
    }
  }
  await store.cascadeProgress?.(parentId, true);
}

/**
 * Finishes the cascades of cancels whose canceller died (RunStore.cascadesDue: no progress for
 * `olderThanMs`): a worker calls it now and then. A run reopened since (engine.retry) has left
 * the store's record of cascades; one found not ended, or gone, is dropped from it. A fan-out
 * child among them is reported to its own parent again (its canceller may have died before).
 */
export async function resumeCascades(store: RunStore, scheduler: Scheduler, olderThanMs: number): Promise<void> {
  for (const parentId of (await store.cascadesDue?.(olderThanMs)) ?? []) {
    const parent = await store.load(parentId);
    if (!parent || !isFinal(parent.status)) {
      await store.cascadeProgress?.(parentId, true);
      continue;
    }
    await cancelChildren(store, scheduler, parentId, parent.step);
    // Its step's task finds it ended and reports it (idempotent: an end is recorded once).
    if (parent.parent) await scheduler.addStep(parentId, parent.step, parent.target, taskOptionsOf(parent));
  }
}

/** Cancels one child run (and its own children); whether it was cancelled here. */
async function cancelChild(
  store: RunStore,
  scheduler: Scheduler,
  id: string,
  ancestors: readonly string[],
): Promise<boolean> {
  const { result, wakes } = await store.cancel(id);
  await scheduler.promote(wakes);
  if (result !== 'cancelled-waiting') return result === 'cancelled';
  const child = await store.position(id);
  if (child) await cancelChildren(store, scheduler, id, child.step, ancestors); // it waited on a fan-out of its own
  return true;
}
