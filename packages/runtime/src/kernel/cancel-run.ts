import { childRunId, isFinal, type CancelResult, type RunStore, type StoredFanOut } from './run-store.js';
import { taskId, taskOptionsOf, type Scheduler } from './scheduler.js';
import { recordRunEnd } from '../telemetry/tracing.js';

/** Children cancelled at once when a fan-out ends early (each batch runs concurrently). */
const CANCEL_BATCH = 100;

/**
 * Cancels a run now and what hangs on it: its status becomes `cancelled` and nothing it does later
 * commits (a step in flight is aborted through the store's `cancelled` event and stops at its step
 * boundary); a fan-out's children are cancelled too, and theirs in turn; a cancelled child's
 * parent hears of it. `by` names who cancels, for the run's event log (its children's say `parent`).
 */
export async function cancelRun(
  store: RunStore,
  scheduler: Scheduler,
  runId: string,
  by?: string,
): Promise<CancelResult> {
  const { result, wakes } = await store.cancel(runId, by);
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

/** How a cascade of cancels goes (cancelChildren). */
export interface CascadeOptions {
  /** The cascades this one is part of (a parent's parent's…): their records are renewed too. */
  ancestors?: readonly string[];
  /** Stops the cascade between batches (a worker that closes); its record stays, for another. */
  signal?: AbortSignal;
}

/**
 * Cancels the child runs of the fan-out `parentId` made at `parentStep`, and theirs in turn. Item
 * children need nothing: their tasks find the parent ended and stop. The store keeps the cascade
 * recorded until it is done (RunStore.cascadesDue), its time renewed before each batch, with its
 * ancestors': should this process die in the middle, a worker finishes it ({@link resumeCascades}).
 * A cascade whose record is gone stops: the parent was reopened since (engine.retry), or another
 * cascade of it finished (having cancelled every child started by its end). Idempotent: a child
 * cancelled already is left alone.
 *
 * @returns whether the cascade went to its end (not stopped by its record gone or `signal`).
 */
export async function cancelChildren(
  store: RunStore,
  scheduler: Scheduler,
  parentId: string,
  parentStep: number,
  { ancestors = [], signal }: CascadeOptions = {},
): Promise<boolean> {
  // Only the children started have records (see RunStore.createChildren). Read again once they
  // are cancelled: the run may have been retried and cancelled again meanwhile (this cascade then
  // goes on under the new cancel's record), with more children started since; they go too.
  const ofRuns = (fanOut: StoredFanOut | undefined): fanOut is StoredFanOut =>
    fanOut?.step === parentStep && fanOut.request.kind === 'runs';
  let covered = 0;
  for (let fanOut = await store.fanOutOf(parentId); ofRuns(fanOut) && covered < fanOut.started;) {
    for (let first = covered; first < fanOut.started; first += CANCEL_BATCH) {
      if (signal?.aborted || (await store.cascadeProgress?.(parentId, false)) === false) return false;
      if (store.cascadeProgress) await Promise.all(ancestors.map((id) => store.cascadeProgress!(id, false)));
      const ids = Array.from({ length: Math.min(CANCEL_BATCH, fanOut.started - first) }, (_, i) =>
        childRunId(parentId, parentStep, first + i),
      );
      const inner = { ancestors: [parentId, ...ancestors], ...(signal ? { signal } : {}) };
      const cancelled = await Promise.all(ids.map((id) => cancelChild(store, scheduler, id, inner)));
      // Traced (the fan-out step had a trace context): each cancelled child's run span ends here.
      const trace = fanOut.request.trace;
      if (trace === undefined) continue;
      const ended = await store.summaries(ids.filter((_, i) => cancelled[i]));
      for (const run of ended) if (run) recordRunEnd({ ...run, trace }, 'cancelled', run.finishedAt ?? run.updatedAt);
    }
    covered = fanOut.started;
    fanOut = await store.fanOutOf(parentId);
  }
  await store.cascadeProgress?.(parentId, true);
  return true;
}

/**
 * Finishes the cascades of cancels whose canceller died (RunStore.cascadesDue: no progress for
 * `olderThanMs`), a few claimed at a time, until none is due or `signal` aborts: a worker calls it
 * now and then. One found not ended (reopened since), or gone, is dropped. A fan-out child among
 * them is reported to its own parent again (its canceller may have died before doing it).
 */
export async function resumeCascades(
  store: RunStore,
  scheduler: Scheduler,
  olderThanMs: number,
  signal?: AbortSignal,
): Promise<void> {
  while (!signal?.aborted) {
    const due = (await store.cascadesDue?.(olderThanMs)) ?? [];
    if (due.length === 0) return;
    for (const parentId of due) {
      const parent = await store.load(parentId);
      if (!parent || !isFinal(parent.status)) {
        await store.cascadeProgress?.(parentId, true);
        continue;
      }
      const done = await cancelChildren(store, scheduler, parentId, parent.step, signal ? { signal } : {});
      if (!done || !parent.parent) continue;
      // Its step's task finds it ended and reports it (an end is recorded once); a failed job of
      // that id, kept for inspection, would swallow the add.
      const task = taskId({ type: 'step', runId: parentId, step: parent.step });
      await scheduler.forgetFailed([task]);
      await scheduler.addStep(parentId, parent.step, parent.target, taskOptionsOf(parent));
    }
  }
}

/** Cancels one child run (and its own children); whether it was cancelled here. */
async function cancelChild(
  store: RunStore,
  scheduler: Scheduler,
  id: string,
  options: CascadeOptions,
): Promise<boolean> {
  const { result, wakes } = await store.cancel(id, 'parent');
  await scheduler.promote(wakes);
  if (result !== 'cancelled-waiting') return result === 'cancelled';
  const child = await store.position(id);
  if (child) await cancelChildren(store, scheduler, id, child.step, options); // it waited on a fan-out of its own
  return true;
}
