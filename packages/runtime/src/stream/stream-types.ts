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
  /** What node code passed to `this.emit`, as it came back from JSON. */
  data: Json;
  /** For an entry written by an item of a ParallelBatchNode fan-out: the item's index. */
  item?: number;
}

/** Options of {@link Engine.stream}. */
export interface StreamOptions {
  /** Start after the entry with this id (the last one a follower saw). @defaultValue from the first entry */
  from?: string;
}
