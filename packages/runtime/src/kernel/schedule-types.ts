import type { JsonObject } from '../json/json.js';

/**
 * When a schedule starts runs ({@link Engine.schedule}): `every` or `cron`, exactly one.
 *
 * @see BullMQ job schedulers (`Queue.upsertJobScheduler`), which RedisEngine's schedules are.
 */
export interface ScheduleOptions {
  /**
   * Starts a run every this many **milliseconds**, the first at once (BullMQ's `every`). An
   * integer from 1.
   */
  every?: number;
  /**
   * Starts a run at each time a cron pattern names: 5 fields (`minute hour day month weekday`,
   * `0 * * * *` hourly) or 6 with seconds first (`*\/10 * * * * *` every ten seconds), as
   * `cron-parser` reads them (BullMQ's `pattern`).
   */
  cron?: string;
  /** The IANA time zone `cron` is read in (`Europe/Paris`); only with `cron`. @defaultValue `'UTC'` */
  tz?: string;
  /**
   * What a tick does while the run the schedule started last has not ended: `'skip'` starts
   * nothing (the next tick tries again), `'allow'` starts another run anyway.
   * @defaultValue `'skip'`
   */
  overlap?: 'skip' | 'allow';
}

/** The options of the runs a schedule starts. */
export interface ScheduleRunOptions<P extends object = object> {
  /** The runs' params (rule S6). Must survive JSON. @defaultValue `{}` */
  params?: P;
  /** The runs' priority ({@link RunOptions.priority}). @defaultValue none */
  priority?: number;
}

/** A schedule as {@link Engine.schedules} lists it. Times are epoch milliseconds. */
export interface ScheduleInfo {
  name: string;
  /** The flow its runs run. */
  flow: string;
  /** Its period, in ms, for an `every` schedule. */
  every?: number;
  /** Its cron pattern, for a `cron` schedule, and the time zone it is read in. */
  cron?: string;
  tz?: string;
  overlap: 'skip' | 'allow';
  /** When its next tick is due, when one is. */
  next?: number;
  /** The `shared` and params each of its runs starts with, and their priority. */
  shared: JsonObject;
  params: JsonObject;
  priority?: number;
  /** The run it started last, if any. */
  lastRunId?: string;
  /** Ticks that started nothing because its last run had not ended (`overlap: 'skip'`). */
  skipped: number;
}
