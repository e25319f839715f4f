import cronParser from 'cron-parser';
import type { Clock } from '../kernel/clock.js';
import { scheduleInfoOf, type ScheduleDefinition } from '../kernel/schedule-definition.js';
import type { ScheduleRunLog } from '../kernel/schedule-tick.js';
import type { ScheduleInfo } from '../kernel/schedule-types.js';

interface Entry {
  definition: ScheduleDefinition;
  /** When the next tick is due (epoch ms on the clock). */
  next: number;
  timer: unknown;
}

/**
 * LocalEngine's schedules: BullMQ's job schedulers in this process, on the injected clock. An
 * `every` schedule ticks at once, then every `every` ms after the tick before (ticks missed
 * while the process was busy are not made up: the next is the first slot after now, as BullMQ);
 * a `cron` schedule ticks at each time its pattern names after now. Each tick calls `onTick`.
 */
export class LocalSchedules implements ScheduleRunLog {
  private readonly entries = new Map<string, Entry>();
  private readonly lastRuns = new Map<string, string>();
  private readonly skipped = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly onTick: (schedule: ScheduleDefinition, at: number) => void,
  ) {}

  /** Adds the schedule, or replaces the one of that name (its next tick computed afresh). */
  upsert(definition: ScheduleDefinition): void {
    this.remove(definition.name, false);
    const now = this.clock.now();
    const next = definition.every !== undefined ? now : nextCronTick(definition, now);
    this.arm({ definition, next, timer: undefined });
  }

  /** Removes the schedule; whether it existed. Runs it started go on. */
  remove(name: string, forgetLastRun = true): boolean {
    const entry = this.entries.get(name);
    if (forgetLastRun) {
      this.lastRuns.delete(name);
      this.skipped.delete(name);
    }
    if (!entry) return false;
    this.clock.clearTimeout(entry.timer);
    this.entries.delete(name);
    return true;
  }

  list(): ScheduleInfo[] {
    return [...this.entries.values()]
      .map(({ definition, next }) =>
        scheduleInfoOf(definition, {
          next,
          lastRunId: this.lastRuns.get(definition.name),
          skipped: this.skipped.get(definition.name),
        }),
      )
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  async lastRun(schedule: string): Promise<string | undefined> {
    return this.lastRuns.get(schedule);
  }

  async setLastRun(schedule: string, runId: string): Promise<void> {
    this.lastRuns.set(schedule, runId);
  }

  async noteSkipped(schedule: string): Promise<void> {
    this.skipped.set(schedule, (this.skipped.get(schedule) ?? 0) + 1);
  }

  /** Stops every schedule (the engine closes). */
  close(): void {
    for (const entry of this.entries.values()) this.clock.clearTimeout(entry.timer);
    this.entries.clear();
  }

  private arm(entry: Entry): void {
    this.entries.set(entry.definition.name, entry);
    entry.timer = this.clock.setTimeout(() => this.fire(entry), Math.max(0, entry.next - this.clock.now()));
  }

  private fire(entry: Entry): void {
    if (this.entries.get(entry.definition.name) !== entry) return; // replaced or removed meanwhile
    const at = entry.next;
    const now = this.clock.now();
    const { definition } = entry;
    let next: number;
    if (definition.every !== undefined) {
      next = at + definition.every;
      if (next <= now) next = at + Math.ceil((now - at + 1) / definition.every) * definition.every;
    } else {
      next = nextCronTick(definition, Math.max(now, at));
    }
    this.arm({ definition, next, timer: undefined });
    this.onTick(definition, at);
  }
}

/** The first time after `after` (epoch ms) that the schedule's cron pattern names. */
function nextCronTick(definition: ScheduleDefinition, after: number): number {
  const expression = cronParser.parseExpression(definition.cron!, {
    currentDate: new Date(after),
    ...(definition.tz === undefined ? {} : { tz: definition.tz }),
  });
  return expression.next().getTime();
}
