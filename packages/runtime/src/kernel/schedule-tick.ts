import type { FlowRegistry } from '../interpreter/flow-definition.js';
import type { Clock } from './clock.js';
import { prepareRun } from './run-client.js';
import { isFinal, type RunStore } from './run-store.js';
import type { ScheduleDefinition } from './schedule-definition.js';
import type { Scheduler } from './scheduler.js';
import { startRun } from './start-run.js';

/**
 * Where an engine keeps the run each schedule started last (the overlap rule reads it) and how
 * many ticks it skipped.
 */
export interface ScheduleRunLog {
  lastRun(schedule: string): Promise<string | undefined>;
  setLastRun(schedule: string, runId: string): Promise<void>;
  /** Counts a tick that started nothing because the last run had not ended. */
  noteSkipped(schedule: string): Promise<void>;
}

/** What a tick did: started a run, or skipped because the schedule's last run still runs. */
export type TickOutcome = { type: 'started'; runId: string } | { type: 'skipped'; running: string };

/** What a tick needs of the engine or worker that runs it. */
export interface TickHost {
  registry: FlowRegistry;
  store: RunStore;
  scheduler: Scheduler;
  log: ScheduleRunLog;
  clock: Clock;
  maxCheckpointBytes: number;
}

/**
 * One tick of a schedule, due at `at` (epoch ms), on any engine: with `overlap: 'skip'`, nothing
 * while the run the schedule started last has not ended; else a run of the schedule's flow with
 * its `shared`, params and priority. The run's idempotency key names the schedule and the tick,
 * so a tick delivered twice (BullMQ: a worker died before acknowledging it) starts one run.
 *
 * @throws QueueflowError `UNKNOWN_FLOW` when `host.registry` lacks the flow (a worker without it:
 *   the tick should go to one that has it).
 */
export async function runScheduleTick(schedule: ScheduleDefinition, at: number, host: TickHost): Promise<TickOutcome> {
  if (schedule.overlap === 'skip') {
    const last = await host.log.lastRun(schedule.name);
    const position = last === undefined ? undefined : await host.store.position(last);
    if (last !== undefined && position && !isFinal(position.status)) {
      await host.log.noteSkipped(schedule.name);
      return { type: 'skipped', running: last };
    }
  }
  const run = prepareRun(
    host.registry,
    schedule.flow,
    schedule.shared,
    {
      params: schedule.params,
      idempotencyKey: `schedule.${schedule.name}.${at}`,
      ...(schedule.priority === undefined ? {} : { priority: schedule.priority }),
    },
    host,
  );
  const { runId } = await startRun(host.store, host.scheduler, run, host.clock.now());
  await host.log.setLastRun(schedule.name, runId);
  return { type: 'started', runId };
}
