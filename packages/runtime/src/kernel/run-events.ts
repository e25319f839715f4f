import type { RunChange } from './engine.js';

/** What a store announces as runs change, to clients awaiting results and drivers running steps. */
export interface RunEventListener {
  /**
   * A run (not a fan-out child) changed: a step committed, it parked, ended, was reopened, a child
   * ended (each child of a fan-out of up to 199; of a fan-out of n children beyond, every ⌊n / 100⌋-th, about every 1 %).
   */
  changed?(change: RunChange): void;
  /** Run `runId` (not a fan-out child: its parent hears of it) has ended. */
  ended?(runId: string): void;
  /**
   * Run `runId` was cancelled: a step of it running here must stop. `retries`: the run's retry
   * count (StoredRun.retries, 0 when none) at the cancel; a step of a later retry (the run was
   * reopened since, and this event came late) goes on. Absent: every step of it stops.
   */
  cancelled?(runId: string, retries?: number): void;
  /** Events may have been missed (a subscription was re-established): read again what matters. */
  resync?(): void;
}

/** A store's event feed: pub/sub on Redis, in-process calls in memory. */
export interface RunEventSource {
  /** Subscribes `listener`; resolves once events flow. Returns the unsubscribe function. */
  subscribe(listener: RunEventListener): Promise<() => void>;
}
