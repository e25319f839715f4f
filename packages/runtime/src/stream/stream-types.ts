/** The types of run streams, in a module of types only (no import cycle runs through them). */
import type { Json } from '../json/json.js';

/**
 * One entry of a run's stream, written by `this.emit(data)` in node code. Times are epoch
 * milliseconds.
 */
export interface StreamEntry {
  /**
   * Its place in the stream, `<ms>-<seq>` (a Redis stream id on RedisEngine), increasing: give
   * the last one seen as `from` to go on after it.
   */
  id: string;
  /** The step counter of the step that wrote it (`runContext.step`). */
  step: number;
  /**
   * The try of that step that wrote it: `runContext.attempt`, or higher when an earlier try of
   * the step was cut short (a worker killed mid-step) after it had written entries. Every try
   * that writes entries has an attempt above those of the tries of the same step before it.
   */
  attempt: number;
  /** Id of the node whose code emitted it. */
  node: string;
  /** When it was emitted (the worker's clock, on the store's time). */
  at: number;
  /** What node code passed to `this.emit`, as it came back from JSON; `null` for a restart entry. */
  data: Json;
  /** For an entry written by an item of a ParallelBatchNode fan-out: the item's index. */
  item?: number;
  /**
   * Set on the entry the engine writes, before the first entry of a new try, when the step's
   * last try that wrote entries was cut short: its worker died or lost the step (a takeover, a
   * stalled job) and another worker runs the step again. Such an entry has `data: null`; its
   * `attempt` is the new try's, whose entries follow. Written once per restart.
   */
  restart?: StreamRestart;
}

/** What a restart entry ({@link StreamEntry.restart}) says. */
export interface StreamRestart {
  /** The attempt of the try that was cut short (its entries carry it). */
  attempt: number;
  /** The id of the worker that ran that try and stopped (as `queueflow workers` lists it). */
  stoppedWorker: string;
  /** The id of the worker whose try takes over. */
  worker: string;
}

/** Options of {@link Engine.stream}. */
export interface StreamOptions {
  /** Start after the entry with this id (the last one a follower saw). @defaultValue from the first entry */
  from?: string;
}
