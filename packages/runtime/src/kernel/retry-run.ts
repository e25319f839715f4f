import { QueueflowError } from '../errors/queueflow-error.js';
import { childRunId, type RunStore, type StoredRun } from './run-store.js';
import { fanInTarget, itemTarget } from './fan-out-targets.js';
import { taskId, taskOptionsOf, type Scheduler } from './scheduler.js';

/**
 * Lets a `failed` or `cancelled` run go on under the same id, from its last committed checkpoint
 * (DESIGN "Operating runs"; Temporal's reset, bull-board's retry): the step that did not commit
 * runs again, committed steps do not. A fan-out parent goes back to waiting and runs again only
 * the children that did not complete (child runs are retried the same way, recursively; items
 * are added again).
 *
 * @throws QueueflowError `RUN_NOT_FOUND` (`notFound`), `RUN_NOT_RETRYABLE` for a run still going or completed.
 */
export async function retryRun(
  store: RunStore,
  scheduler: Scheduler,
  runId: string,
  notFound: (runId: string) => Error,
): Promise<void> {
  const reply = await store.reopen(runId);
  switch (reply.result) {
    case 'missing':
      throw notFound(runId);
    case 'completed':
      throw new QueueflowError(
        'RUN_NOT_RETRYABLE',
        `run '${runId}' has completed: nothing to retry (fork it instead)`,
        {
          retryable: false,
        },
      );
    case 'not-ended':
      throw new QueueflowError(
        'RUN_NOT_RETRYABLE',
        `run '${runId}' is ${reply.status}: only a failed or cancelled run can be retried`,
        { retryable: false },
      );
  }
  await goOn(store, scheduler, reply.run, reply.reopenedChildren, true);
}

/**
 * A child that completed after its parent had ended (failed fast, or was cancelled) was not
 * recorded on it, and a retry of the parent counts it among the children to run again: it is not
 * run again; a task of its step lets the step driver report its end to the reopened parent
 * (`ensureProgress` → `reportEnded`).
 */
async function reportAgain(
  store: RunStore,
  scheduler: Scheduler,
  childId: string,
  retry: number | undefined,
): Promise<void> {
  const child = await store.load(childId);
  if (!child) return;
  await scheduler.forgetFailed([taskId({ type: 'step', runId: childId, step: child.step })]);
  await scheduler.addStep(childId, child.step, child.target, taskOptionsOf(child, retry));
}

/**
 * Adds what a reopened run needs to go on: its step (`addTasks`), or, for one waiting on a
 * fan-out, its children reopened in turn; the children started before are added again, the others
 * wait for their turn, and a fan-out whose children had all completed gets its fan-in. The tasks
 * added carry the run's retry count (StepTask.retry): a task of the same step still held from
 * before (a cancelled step winding down) does not swallow them.
 */
async function goOn(
  store: RunStore,
  scheduler: Scheduler,
  run: StoredRun,
  reopenedChildren: number[],
  addTasks: boolean,
): Promise<void> {
  const stepTask = taskId({ type: 'step', runId: run.id, step: run.step });
  const fanOut = run.status === 'waiting' ? await store.fanOutOf(run.id) : undefined;
  if (!fanOut || reopenedChildren.length === 0) {
    if (!addTasks) return;
    await scheduler.forgetFailed([stepTask]);
    // A parent whose children had all completed failed in its fan-in: that step runs again.
    const target = fanOut ? fanInTarget(fanOut.request) : run.target;
    await scheduler.addStep(run.id, run.step, target, taskOptionsOf(run, run.retries));
    return;
  }
  const started = (index: number): boolean => addTasks && index < fanOut.started;
  if (fanOut.request.kind === 'runs') {
    for (const index of reopenedChildren) {
      const childId = childRunId(run.id, run.step, index);
      const reply = await store.reopen(childId);
      if (reply.result === 'reopened') await goOn(store, scheduler, reply.run, reply.reopenedChildren, started(index));
      else if (reply.result === 'completed') await reportAgain(store, scheduler, childId, run.retries);
    }
    return;
  }
  const indices = reopenedChildren.filter(started);
  const items = await Promise.all(
    indices.map(async (index) => ({ index, item: (await store.itemOf(run.id, run.step, index)) ?? null })),
  );
  await scheduler.forgetFailed(
    indices.map((index) => taskId({ type: 'item', runId: run.id, step: run.step, index, item: null })),
  );
  await scheduler.addItems(run.id, run.step, items, itemTarget(fanOut.request), taskOptionsOf(run, run.retries));
}
