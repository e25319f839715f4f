import type { ErrorRecord } from '../errors/error-record.js';

/**
 * What a process hears of each try of a step (or of an item) it runs: for logs. Times are ms.
 *
 * - `started`: the try began;
 * - `ended`: it came to `outcome` (`next`, `completed`, `fan-out`, `park`, `retry`, `failed`)
 *   after `durationMs`, with the error of a failed try.
 */
export type StepEvent = {
  runId: string;
  flow: string;
  node: string;
  /** The step counter of the run (as `history` numbers steps: #0 first). */
  step: number;
  /** 0-based try of the step (or item). */
  attempt: number;
  /** The item, for a try of a ParallelBatchNode's item. */
  item?: number;
} & ({ type: 'started' } | { type: 'ended'; outcome: string; durationMs: number; error?: ErrorRecord });

let listener: ((event: StepEvent) => void) | undefined;

/**
 * Sets the one listener of the tries this process runs (a worker's log), or removes it with
 * `null`. Called synchronously on the step's path: keep it quick (a logger's write); what it
 * throws is ignored.
 */
export function setStepListener(next: ((event: StepEvent) => void) | null): void {
  listener = next ?? undefined;
}

/** Tells the listener, if any, of a try's event. */
export function emitStepEvent(event: () => StepEvent): void {
  if (!listener) return;
  try {
    listener(event());
  } catch {
    // A log that fails must not fail the step.
  }
}
