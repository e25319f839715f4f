import type { Job, JobsOptions } from 'bullmq';
import type { RedisConnection } from './connection.js';
import { scheduleInfoOf, type ScheduleDefinition, type ScheduleRunLog } from '@queueflow/runtime/kernel';
import type { ScheduleInfo } from '@queueflow/runtime';
import type { BullmqScheduler } from './bullmq-scheduler.js';
import type { RedisKeys } from './redis-keys.js';

/** The name of a schedule's tick jobs in the default queue. */
export const TICK_JOB = 'tick';

/**
 * A tick that fails (Redis unreachable a moment) is tried again, a few times, seconds apart; a
 * tick whose flow the worker lacks is deferred instead (see the worker). Done ticks are removed;
 * failed ones kept a week for inspection, as step jobs.
 */
const TICK_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
};

/**
 * RedisEngine's schedules (DESIGN "Flow control"): each is a BullMQ job scheduler on the default
 * queue (`Queue.upsertJobScheduler`), named after the schedule, whose template carries the
 * schedule's definition. BullMQ adds one `tick` job per tick whatever the number of workers, and
 * a worker serving the default queue runs it (`runScheduleTick`). The run each schedule started
 * last is kept in one hash, for the overlap rule and `schedules()`.
 */
export class RedisSchedules implements ScheduleRunLog {
  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: RedisKeys,
    private readonly scheduler: BullmqScheduler,
  ) {}

  /** Adds the schedule, or replaces the one of that name. */
  async upsert(definition: ScheduleDefinition): Promise<void> {
    const repeat =
      definition.every !== undefined
        ? { every: definition.every }
        : { pattern: definition.cron!, ...(definition.tz === undefined ? {} : { tz: definition.tz }) };
    await this.scheduler.queue.upsertJobScheduler(definition.name, repeat, {
      name: TICK_JOB,
      data: definition,
      opts: TICK_OPTIONS,
    });
  }

  /** Removes the schedule and its last run's note; whether there was one. */
  async remove(name: string): Promise<boolean> {
    const [removed] = await Promise.all([
      this.scheduler.queue.removeJobScheduler(name),
      this.redis.hdel(this.keys.scheduleRuns(), name),
      this.redis.hdel(this.keys.scheduleSkips(), name),
    ]);
    return removed;
  }

  /** Every schedule, by name. */
  async list(): Promise<ScheduleInfo[]> {
    const schedulers = await this.scheduler.queue.getJobSchedulers(0, -1, true);
    const definitions = schedulers
      .map((scheduler) => ({
        definition: scheduler.template?.data as ScheduleDefinition | undefined,
        next: scheduler.next,
      }))
      .filter(
        (entry): entry is { definition: ScheduleDefinition; next: number | undefined } =>
          entry.definition !== undefined,
      );
    if (definitions.length === 0) return [];
    const names = definitions.map((entry) => entry.definition.name);
    const [lastRuns, skips] = await Promise.all([
      this.redis.hmget(this.keys.scheduleRuns(), ...names),
      this.redis.hmget(this.keys.scheduleSkips(), ...names),
    ]);
    return definitions
      .map((entry, i) =>
        scheduleInfoOf(entry.definition, {
          next: entry.next,
          lastRunId: lastRuns[i] ?? undefined,
          skipped: Number(skips[i] ?? 0),
        }),
      )
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async lastRun(schedule: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.scheduleRuns(), schedule)) ?? undefined;
  }

  async setLastRun(schedule: string, runId: string): Promise<void> {
    await this.redis.hset(this.keys.scheduleRuns(), schedule, runId);
  }

  async noteSkipped(schedule: string): Promise<void> {
    await this.redis.hincrby(this.keys.scheduleSkips(), schedule, 1);
  }
}

/**
 * The tick a tick job stands for: its schedule and when it was due (epoch ms). BullMQ names a job
 * scheduler's jobs `repeat:<scheduler id>:<due time>`.
 */
export function tickOfJob(job: Job): { schedule: ScheduleDefinition; at: number } {
  const due = Number(job.id?.slice(job.id.lastIndexOf(':') + 1));
  return { schedule: job.data as ScheduleDefinition, at: Number.isFinite(due) ? due : job.timestamp };
}
