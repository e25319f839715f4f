import type { StepTarget } from '../interpreter/step-types.js';
import type { ChildStart } from './fan-out-driver.js';
import { taskId, type StepTask, type WakeTask } from './scheduler.js';
import type { LoadedRun } from './run-store.js';

/**
 * The steps one task runs beyond its own (StepDriverOptions.continueSteps): its run's next steps
 * on the same queue, the parked runs its steps woke and took (direct hand-off), and the fan-out
 * children started by its children's ends, for at most
 * `maxSteps` steps and until `endsAt`.
 */
export class StepChain {
  /** Steps run so far beyond the task's own. */
  steps = 0;
  /** The queue of the task's step: runs on another queue go back to the scheduler. */
  queue: string | undefined;
  /** Wake ids of parked runs this chain's steps woke and took, to run next (oldest first). */
  readonly taken: string[] = [];
  /**
   * The runs of taken wakes, read for them by the transition that took them (CommitReply.takenRun),
   * by wake id, each with the count of cancels the driver had seen when that transition was sent
   * (CheckpointCache.cancelsSeen: the rule of the driver's remembered runs, kept here for wakes).
   */
  readonly takenRuns = new Map<string, { run: LoadedRun; cancelsSeen: number }>();
  /**
   * Fan-out children whose start this chain's steps made by ending a sibling and took, to run
   * after the chain's own run (oldest first): one ends, the next starts in its slot.
   */
  readonly children: ChildStart[] = [];
  /** Task ids of the taken children run or given back, to release from the worker's taken set. */
  readonly childrenDone: string[] = [];
  /** The step run last: its target, priority and the attempt of its try (for a hand-back). */
  last: { target: StepTarget; priority?: number | undefined; attempt: number } | undefined;

  constructor(
    private readonly maxSteps: number,
    /** Epoch ms after which the chain ends. */
    private readonly endsAt: number,
    /** Aborted when the task's lock is lost or its worker fenced: the chain ends at once. */
    readonly signal?: AbortSignal,
  ) {}

  /**
   * Takes wake `wakeId` to run next, with its run when the transition read it (`run`);
   * `cancelsSeen`: how many cancels the driver had seen when it sent that transition
   * (CheckpointCache.cancelsSeen).
   */
  take(wakeId: string, run: LoadedRun | undefined, cancelsSeen: number): void {
    this.taken.push(wakeId);
    if (run) this.takenRuns.set(wakeId, { run, cancelsSeen });
  }

  /**
   * The run of taken wake `task`, read when it was taken (once), if it was and the driver has seen
   * no cancel since (`cancelsSeen`, its count now): that cancel may be this run's, come after the
   * read, and the step must then read the run again and find it cancelled rather than run its `exec`.
   */
  takenRunOf(task: WakeTask, cancelsSeen: number): LoadedRun | undefined {
    const id = taskId(task);
    const taken = this.takenRuns.get(id);
    this.takenRuns.delete(id);
    return taken?.cancelsSeen === cancelsSeen ? taken.run : undefined;
  }

  /** Whether the chain may run one more step at `now` (epoch ms). */
  mayGoOn(now: number): boolean {
    return this.steps < this.maxSteps && now < this.endsAt && this.signal?.aborted !== true;
  }
}

/** The wake task a wake id names (`<run id>-<step>-p<park count>`, taskId of a wake). */
export function wakeTaskOf(wakeId: string): WakeTask | undefined {
  const match = /^(.+)-(\d+)-p(\d+)$/.exec(wakeId);
  if (!match) return undefined;
  return { type: 'wake', runId: match[1]!, step: Number(match[2]), park: Number(match[3]), attemptBase: 0 };
}

/** The step task of a run's step `step`. */
export function stepTaskOf(runId: string, step: number): StepTask {
  return { type: 'step', runId, step };
}
