import cronParser from 'cron-parser';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { FlowDefinition, FlowRegistry } from '../interpreter/flow-definition.js';
import type { JsonObject } from '../json/json.js';
import { checkRunInput } from './run-input.js';
import { checkPriority } from './run-priority.js';
import type { ScheduleInfo, ScheduleOptions, ScheduleRunOptions } from './schedule-types.js';

/** Longest schedule name, in characters. */
const MAX_SCHEDULE_NAME = 128;

/** Letters, digits, `_`, `-` and `.`, starting with a letter or digit (no `:`: BullMQ ids). */
const SCHEDULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * A schedule as engines store it (RedisEngine: its BullMQ job scheduler's template data): what
 * each tick starts, checked and JSON.
 */
export interface ScheduleDefinition {
  name: string;
  flow: string;
  every?: number;
  cron?: string;
  tz?: string;
  overlap: 'skip' | 'allow';
  shared: JsonObject;
  params: JsonObject;
  priority?: number;
}

/**
 * Checks a schedule and gives its stored form.
 *
 * @throws QueueflowError `INVALID_OPTION` naming the option (a bad name; neither or both of
 *   `every` and `cron`; `every` not an integer from 1; a cron pattern or time zone that does not
 *   parse; `tz` without `cron`; `overlap` not `'skip'` or `'allow'`; a bad priority),
 *   `UNKNOWN_FLOW`, `NOT_JSON` naming the path.
 */
export function checkSchedule(
  registry: FlowRegistry,
  name: string,
  flow: FlowDefinition | string,
  options: ScheduleOptions,
  shared: object,
  runOptions: ScheduleRunOptions = {},
): ScheduleDefinition {
  checkScheduleName(name);
  if (typeof options !== 'object' || options === null) throw invalid('options', 'an object', options);
  const { every, cron, tz, overlap = 'skip' } = options;
  if ((every === undefined) === (cron === undefined))
    throw invalid('every` or `cron', 'given, one of them and not both', { every, cron });
  if (every !== undefined && (typeof every !== 'number' || !Number.isInteger(every) || every < 1))
    throw invalid('every', 'an integer number of milliseconds from 1', every);
  if (tz !== undefined && cron === undefined) throw invalid('tz', 'given only with `cron`', tz);
  if (overlap !== 'skip' && overlap !== 'allow') throw invalid('overlap', "'skip' or 'allow'", overlap);
  let zone: string | undefined;
  if (cron !== undefined) {
    zone = tz ?? 'UTC';
    if (typeof cron !== 'string') throw invalid('cron', 'a cron pattern', cron);
    if (typeof zone !== 'string' || !isTimeZone(zone)) throw invalid('tz', 'an IANA time zone', zone);
    try {
      cronParser.parseExpression(cron, { tz: zone });
    } catch (error) {
      throw invalid('cron', `a cron pattern (${(error as Error).message})`, cron);
    }
  }
  const graph = registry.graph(flow);
  const input = checkRunInput(shared, runOptions.params);
  const priority = checkPriority(runOptions.priority);
  return {
    name,
    flow: graph.flowName,
    ...(every === undefined ? {} : { every }),
    ...(cron === undefined ? {} : { cron, tz: zone! }),
    overlap,
    // Copies: what the caller does with its objects later changes no tick.
    shared: structuredClone(input.shared),
    params: structuredClone(input.params),
    ...(priority === undefined ? {} : { priority }),
  };
}

/**
 * Checks a schedule's name: 1 to 128 letters, digits, `_`, `-` or `.`, starting with a letter or digit.
 * @throws QueueflowError `INVALID_OPTION`.
 */
export function checkScheduleName(name: unknown): string {
  if (typeof name !== 'string' || name.length > MAX_SCHEDULE_NAME || !SCHEDULE_NAME.test(name)) {
    throw invalid(
      'name',
      `a schedule name of 1 to ${MAX_SCHEDULE_NAME} letters, digits, '_', '-' or '.', starting with a letter or digit`,
      name,
    );
  }
  return name;
}

/** A schedule as `schedules()` lists it. */
export function scheduleInfoOf(
  definition: ScheduleDefinition,
  state: { next?: number | undefined; lastRunId?: string | undefined; skipped?: number | undefined },
): ScheduleInfo {
  const { name, flow, every, cron, tz, overlap, shared, params, priority } = definition;
  return {
    name,
    flow,
    ...(every === undefined ? {} : { every }),
    ...(cron === undefined ? {} : { cron }),
    ...(tz === undefined ? {} : { tz }),
    overlap,
    ...(state.next === undefined ? {} : { next: state.next }),
    shared,
    params,
    ...(priority === undefined ? {} : { priority }),
    ...(state.lastRunId === undefined ? {} : { lastRunId: state.lastRunId }),
    skipped: state.skipped ?? 0,
  };
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function invalid(option: string, expected: string, got: unknown): QueueflowError {
  const shown = typeof got === 'string' ? `'${got}'` : (JSON.stringify(got) ?? String(got));
  return new QueueflowError('INVALID_OPTION', `schedule: expected \`${option}\` to be ${expected}, got ${shown}`, {
    retryable: false,
  });
}
