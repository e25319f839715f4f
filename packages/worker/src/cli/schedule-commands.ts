import { Command, InvalidArgumentError, Option } from 'commander';
import type { JsonObject, ScheduleInfo, ScheduleOptions } from '@queueflow/runtime';
import {
  jsonOption,
  parseJsonObject,
  positiveInteger,
  prefixHint,
  prefixOption,
  priorityOption,
  redisOption,
  type ConnectionFlags,
} from './options.js';

/**
 * `queueflow schedule add|remove|list`: runs started on a schedule (`engine.schedule`), kept in
 * Redis as BullMQ job schedulers; workers serving the default queue start the runs.
 */
export function scheduleCommand(): Command {
  return new Command('schedule')
    .description('start runs on a schedule (every N ms, or a cron pattern): add, remove, list')
    .addCommand(addCommand())
    .addCommand(removeCommand())
    .addCommand(listCommand());
}

function addCommand(): Command {
  return new Command('add')
    .argument('<name>', 'schedule name (letters, digits, _ - .); an existing schedule of that name is replaced')
    .argument('<flow>', 'flow name')
    .description('add (or replace) a schedule that starts a run of <flow> at each tick')
    .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow)')
    .option('--every <ms>', 'start a run every this many milliseconds, the first at once', positiveInteger)
    .option('--cron <pattern>', "start a run at each time a cron pattern names (e.g. '0 6 * * *')")
    .option('--tz <zone>', 'IANA time zone the cron pattern is read in (default UTC)')
    .addOption(
      new Option('--overlap <mode>', "a tick while the last run has not ended: 'skip' it or 'allow' another run")
        .choices(['skip', 'allow'])
        .default('skip'),
    )
    .option('--shared <json>', 'shared store each run starts with, JSON', parseJsonObject, {})
    .option('--params <json>', 'params of each run, JSON', parseJsonObject, {})
    .option('--priority <n>', 'priority of each run: 1 runs first (BullMQ priorities)', priorityOption)
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(prefixOption())
    .action(
      async (
        name: string,
        flow: string,
        options: ConnectionFlags & {
          flows: string;
          every?: number;
          cron?: string;
          tz?: string;
          overlap: 'skip' | 'allow';
          shared: JsonObject;
          params: JsonObject;
          priority?: number;
          json?: boolean;
        },
      ) => {
        if ((options.every === undefined) === (options.cron === undefined))
          throw new InvalidArgumentError('give --every <ms> or --cron <pattern> (one of them)');
        const when: ScheduleOptions = {
          ...(options.every === undefined ? {} : { every: options.every }),
          ...(options.cron === undefined ? {} : { cron: options.cron }),
          ...(options.tz === undefined ? {} : { tz: options.tz }),
          overlap: options.overlap,
        };
        const [{ loadFlows }, { withEngine }] = await Promise.all([
          import('../load-flows.js'),
          import('./with-engine.js'),
        ]);
        const flows = await loadFlows(options.flows);
        await withEngine(
          options,
          async (engine) => {
            await engine.schedule(name, flow, when, options.shared, {
              params: options.params,
              ...(options.priority === undefined ? {} : { priority: options.priority }),
            });
            const added = (await engine.schedules()).find((schedule) => schedule.name === name);
            if (options.json) return console.log(JSON.stringify(added, null, 2));
            console.log(`schedule ${name} added: ${describe(added!)}`);
          },
          flows,
        );
      },
    );
}

function removeCommand(): Command {
  return new Command('remove')
    .argument('<name>', 'schedule name')
    .description('remove a schedule (runs it started go on); exit code 1 when there is none')
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(prefixOption())
    .action(async (name: string, options: ConnectionFlags & { json?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const removed = await engine.unschedule(name);
        if (options.json) console.log(JSON.stringify({ name, removed }));
        else if (removed) console.log(`schedule ${name} removed`);
        else console.error(`queueflow: no schedule '${name}' under prefix '${options.prefix}'`);
        if (!removed) process.exitCode = 1;
      });
    });
}

function listCommand(): Command {
  return new Command('list')
    .description('list the schedules: when each ticks, its next tick, its last run, skipped ticks')
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(prefixOption())
    .action(async (options: ConnectionFlags & { json?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const schedules = await engine.schedules();
        if (options.json) return console.log(JSON.stringify(schedules, null, 2));
        if (schedules.length === 0)
          return console.log(
            `no schedule under prefix '${options.prefix}' (add one with \`queueflow schedule add${prefixHint(options.prefix)}\`)`,
          );
        for (const schedule of schedules) console.log(`${schedule.name}  ${describe(schedule)}`);
      });
    });
}

/** One line: the flow, when it ticks, the next tick, the last run, skipped ticks. */
function describe(schedule: ScheduleInfo): string {
  const when =
    schedule.every !== undefined ? `every ${schedule.every} ms` : `cron '${schedule.cron}' ${schedule.tz ?? 'UTC'}`;
  return [
    `flow ${schedule.flow}`,
    when,
    `overlap ${schedule.overlap}`,
    ...(schedule.priority === undefined ? [] : [`priority ${schedule.priority}`]),
    `next ${schedule.next === undefined ? '-' : new Date(schedule.next).toISOString()}`,
    `last run ${schedule.lastRunId ?? '-'}`,
    `skipped ${schedule.skipped}`,
  ].join('  ');
}
