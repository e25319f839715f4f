import type { StoredRun } from './run-store.js';

/**
 * The runs this driver itself advanced last, by run id: when the next step of a run lands on the
 * same driver (the common case for a sequential flow), the step starts from the state this driver
 * committed instead of reading it back from the store. Safe because every commit is guarded by
 * the step counter (and checks for a cancel request): if anyone else moved the run on, the commit
 * is refused and the driver reads the run again.
 */
export class CheckpointCache {
  private readonly entries = new Map<string, StoredRun>();

  constructor(private readonly capacity = 1000) {}

  /** Remembers `run` as committed at `run.step`. */
  remember(run: StoredRun): void {
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

  forget(runId: string): void {
    this.entries.delete(runId);
  }

  clear(): void {
    this.entries.clear();
  }
}
