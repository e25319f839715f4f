import type { StoredRun } from './run-store.js';

/**
 * The runs this driver itself advanced last, by run id: when the next step of a run lands on the
 * same driver (the common case for a sequential flow), the step starts from the state this driver
 * committed instead of reading it back from the store. Safe because every commit is guarded by
 * the step counter (and checks for a cancel request): if anyone else moved the run on, the commit
 * is refused and the driver reads the run again.
 *
 * A cancel is the one change a step must see before it begins (its `exec` must not run), so the
 * cache counts the cancels it is told of ({@link CheckpointCache.cancelsSeen}): a run that a
 * transition read or made before the latest cancel is not remembered, whichever run that cancel
 * was of. Its reply may come after the cancel event, and the cancel may be that run's.
 */
export class CheckpointCache {
  private readonly entries = new Map<string, StoredRun>();
  private cancels = 0;

  constructor(private readonly capacity = 1000) {}

  /**
   * How many cancels this cache has been told of so far ({@link CheckpointCache.cancelled},
   * {@link CheckpointCache.clear}). Read it before sending a transition whose reply brings a run
   * to remember, and give it to {@link CheckpointCache.remember} with that run.
   */
  get cancelsSeen(): number {
    return this.cancels;
  }

  /**
   * Remembers `run` as committed at `run.step`, unless a cancel came since `cancelsSeen` (the
   * count read before the transition that read or made `run` was sent): then the step reads it.
   */
  remember(run: StoredRun, cancelsSeen: number): void {
    if (cancelsSeen !== this.cancels) return;
    this.entries.delete(run.id);
    this.entries.set(run.id, run);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  /** The remembered state of `runId` if it stands at `step`; forgets it either way. */
  take(runId: string, step: number): StoredRun | undefined {
    const run = this.entries.get(runId);
    this.entries.delete(runId);
    return run?.step === step ? run : undefined;
  }

  /** Forgets `runId` (its commit was refused: someone else moved it on). */
  forget(runId: string): void {
    this.entries.delete(runId);
  }

  /**
   * Forgets `runId`, cancelled, and counts the cancel: a run read before it is not remembered
   * (it may be this one, its reply still on its way).
   */
  cancelled(runId: string): void {
    this.entries.delete(runId);
    this.cancels++;
  }

  /**
   * Forgets every run, and counts as a cancel of each: for when any of them may have been
   * cancelled unseen (lost cancel events) or this driver may no longer commit (fenced).
   */
  clear(): void {
    this.entries.clear();
    this.cancels++;
  }
}
