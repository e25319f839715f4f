import { Command, Option } from 'commander';
import type { Json, JsonObject, RunResult, RunStatus, RunInfo, RunSummary } from '@queueflow/runtime';
import { isFinal } from '@queueflow/runtime/kernel';
import type { RedisEngine } from '../redis-engine.js';
import {
  clusterOption,
  jsonOption,
  parseJson,
  parseJsonObject,
  parseSince,
  positiveInteger,
  prefixHint,
  priorityOption,
  prefixOption,
  redisOption,
  type ConnectionFlags,
} from './options.js';
import { SHARED_SUMMARY_BYTES, summariseShared } from './shared-summary.js';

/** Exit code of `wait --timeout` when the run has not ended in time (GNU timeout's). */
const WAIT_TIMED_OUT = 124;

const STATUSES: RunStatus[] = ['queued', 'running', 'waiting', 'throttled', 'completed', 'failed', 'cancelled'];

/** The commands on runs: run, status, wait, send, list, cancel. */
export function runCommands(): Command[] {
  return [runCommand(), statusCommand(), waitCommand(), sendCommand(), listCommand(), cancelCommand()];
}

function runCommand(): Command {
  return new Command('run')
    .argument('<flow>', 'flow name')
    .description('start a run and wait for it (or print its id with --detach)')
    .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow)')
    .option('--shared <json>', 'initial shared store, JSON', parseJsonObject, {})
    .option('--params <json>', 'params, JSON', parseJsonObject, {})
    .option('--idempotency-key <key>', 'start the run once: a second run with this key returns the first')
    .option('--priority <n>', 'priority of the run and its steps: 1 runs first (BullMQ priorities)', priorityOption)
    .option('--detach', 'print the run id and exit without waiting')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(
      async (
        flow: string,
        options: ConnectionFlags & {
          flows: string;
          shared: JsonObject;
          params: JsonObject;
          idempotencyKey?: string;
          priority?: number;
          detach?: boolean;
        },
      ) => {
        const [{ loadFlows }, { withEngine }, { awaitResult }] = await Promise.all([
          import('../load-flows.js'),
          import('./with-engine.js'),
          import('./await-result.js'),
        ]);
        const flows = await loadFlows(options.flows);
        await withEngine(
          options,
          async (engine) => {
            const handle = await engine.start(flow, options.shared, {
              params: options.params,
              ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
              ...(options.priority === undefined ? {} : { priority: options.priority }),
            });
            if (options.detach) {
              console.log(handle.id);
              return;
            }
            // With a key, the run may be one an earlier start made: say which run, not that it started.
            const announce =
              options.idempotencyKey === undefined
                ? `run ${handle.id} started`
                : `run ${handle.id} (idempotency key '${options.idempotencyKey}': this key's run, new or started before)`;
            const result = await awaitResult(engine, handle.id, { ...options, announce });
            console.log(JSON.stringify(result, null, 2));
            process.exitCode = result.status === 'completed' ? 0 : 1;
          },
          flows,
        );
      },
    );
}

function statusCommand(): Command {
  return new Command('status')
    .argument('<runId>', 'run id')
    .description(
      `print a run's status, current node, attempts, error, timings, the mailbox a parked run waits on (waitingOn) and shared, as JSON (shared summarised when over ${SHARED_SUMMARY_BYTES} bytes)`,
    )
    .option('--shared', 'print shared whole, however large')
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (runId: string, options: ConnectionFlags & { shared?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const info = await engine.get(runId);
        if (!info) {
          console.error(`queueflow: no run '${runId}' under prefix '${options.prefix}' (never started, or expired)`);
          process.exitCode = 1;
          return;
        }
        const shared = options.shared
          ? info.shared
          : summariseShared(info.shared, `\`queueflow status ${runId}${prefixHint(options.prefix)} --shared\``);
        // A parked run: the mailbox it waits on (the run's record does not name it; the mailboxes do).
        const parkedOn =
          info.status === 'waiting' && !info.children
            ? (await engine.mailboxes({ messages: 0 })).flatMap((mailbox) =>
                mailbox.parked
                  .filter((parked) => parked.runId === runId)
                  .map(({ since, deadline }) => ({ mailbox: mailbox.address, since, deadline })),
              )[0]
            : undefined;
        console.log(
          JSON.stringify(
            { ...info, status: shownStatus(info), ...(parkedOn ? { waitingOn: parkedOn } : {}), shared },
            null,
            2,
          ),
        );
      });
    });
}

function waitCommand(): Command {
  return new Command('wait')
    .argument('<runId>', 'run id')
    .description(
      `wait for a run to end and print its result; exit code 0 completed, 1 failed or cancelled (or an error), ${WAIT_TIMED_OUT} not ended within --timeout`,
    )
    .option('--timeout <ms>', 'give up waiting after this many milliseconds (the run goes on)', positiveInteger)
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (runId: string, options: ConnectionFlags & { timeout?: number }) => {
      const [{ withEngine }, { awaitResult }] = await Promise.all([
        import('./with-engine.js'),
        import('./await-result.js'),
      ]);
      await withEngine(options, async (engine) => {
        let result: RunResult;
        try {
          result = await awaitResult(engine, runId, options, options.timeout);
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'RESULT_TIMEOUT') throw error;
          const status = (await engine.get(runId))?.status ?? 'unknown';
          console.error(
            `queueflow: run ${runId} has not ended after ${options.timeout} ms (status ${status}); it goes on without this command`,
          );
          process.exitCode = WAIT_TIMED_OUT;
          return;
        }
        console.log(JSON.stringify(result, null, 2));
        process.exitCode = result.status === 'completed' ? 0 : 1;
      });
    });
}

function sendCommand(): Command {
  return new Command('send')
    .description('send a message (JSON) to a mailbox, e.g. to answer an agent; prints the message id')
    .argument('<address>', 'mailbox address')
    .argument('<json>', 'message body, JSON', parseJson)
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (address: string, body: Json, options: ConnectionFlags) => {
      const { withEngine } = await import('./with-engine.js');
      // The message id: the receiver's message.id.
      await withEngine(options, async (engine) => console.log(await engine.send(address, body)));
    });
}

function listCommand(): Command {
  return new Command('list')
    .description('list runs, newest first')
    .addOption(new Option('--status <status>', 'only runs with this status').choices(STATUSES))
    .option('--flow <flow>', 'only runs of this flow')
    .option(
      '--since <time>',
      'only runs created since: an ISO date, or a duration back from now (10m, 2h, 1d)',
      (value) => parseSince(value),
    )
    .option('--limit <n>', 'most runs listed', positiveInteger, 20)
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(
      async (
        options: ConnectionFlags & { status?: RunStatus; flow?: string; since?: number; limit: number; json?: boolean },
      ) => {
        const { withEngine } = await import('./with-engine.js');
        await withEngine(options, async (engine) => {
          const runs = await listSince(engine, options);
          if (options.status === 'throttled') runs.push(...(await throttledChildren(engine, runs, options)));
          if (options.json) return console.log(JSON.stringify(runs, null, 2));
          // A waiting run may be a fan-out parent: its children's counts are in its info.
          const fanOuts = await Promise.all(
            runs.map((run) => (run.status === 'waiting' ? engine.get(run.id) : Promise.resolve(undefined))),
          );
          runs.forEach((run, i) => {
            const at = new Date(run.createdAt).toISOString();
            const by = run.throttledBy ? `  by '${run.throttledBy}'` : '';
            const parent = run.parentId ? `  child of ${run.parentId}` : '';
            const children = fanOuts[i]?.children;
            const status = children ? 'running' : run.status;
            const fanOut = children ? `  fan-out ${fanOutCounts(children)}` : '';
            console.log(
              `${run.id}  ${run.flow}  ${status.padEnd(9)}  steps ${run.steps}  ${at}${fanOut}${by}${parent}${run.error ? `  ${firstLine(run.error.message)}` : ''}`,
            );
          });
        });
      },
    );
}

/**
 * The status a person reads: a fan-out parent is stored `waiting` (it holds no worker while its
 * children run) but its work goes on, so it shows `running`, with its children's counts beside.
 */
function shownStatus(info: RunInfo): RunStatus {
  return info.status === 'waiting' && info.children ? 'running' : info.status;
}

/** `120 of 6046 children ended, 3 failed`. */
function fanOutCounts(children: NonNullable<RunInfo['children']>): string {
  const failed = children.failed > 0 ? `, ${children.failed} failed` : '';
  return `${children.ended} of ${children.total} children ended${failed}`;
}

/** A list shows one line per run: an error's first line, at most 120 characters (`status <id>` shows it whole). */
function firstLine(message: string, max = 120): string {
  const line = message.split('\n', 1)[0]!;
  return line.length > max || line.length < message.length ? `${line.slice(0, max)}…` : line;
}

/**
 * The fan-out children waiting for a budget (`list` shows runs started by clients only): the
 * runs that the budgets name as waiting, beyond those listed, newest first, up to the limit.
 */
async function throttledChildren(
  engine: RedisEngine,
  listed: RunSummary[],
  options: { flow?: string; since?: number; limit: number },
): Promise<RunSummary[]> {
  const seen = new Set(listed.map((run) => run.id));
  const ids = new Set((await engine.budgets()).flatMap((budget) => budget.waiting).filter((id) => !seen.has(id)));
  const infos = await Promise.all([...ids].map((id) => engine.get(id)));
  return infos
    .filter((info): info is RunInfo => info?.status === 'throttled' && info.parentId !== undefined)
    .filter(
      (info) => (options.flow === undefined || info.flow === options.flow) && info.createdAt >= (options.since ?? 0),
    )
    .map(({ errors: _e, conflicts: _c, children: _ch, shared: _s, ...summary }) => summary)
    .sort((a, b) => b.createdAt - a.createdAt)
    .slice(0, Math.max(0, options.limit - listed.length));
}

/** The newest runs matching the filters, created at `since` or later (runs come newest first). */
async function listSince(
  engine: RedisEngine,
  options: { status?: RunStatus; flow?: string; since?: number; limit: number },
): Promise<RunSummary[]> {
  const filters = {
    ...(options.status ? { status: options.status } : {}),
    ...(options.flow ? { flow: options.flow } : {}),
  };
  if (options.since === undefined) return engine.list({ ...filters, limit: options.limit });
  const found: RunSummary[] = [];
  for (let offset = 0; found.length < options.limit; offset += options.limit) {
    const page = await engine.list({ ...filters, limit: options.limit, offset });
    for (const run of page) {
      if (run.createdAt < options.since || found.length >= options.limit) return found;
      found.push(run);
    }
    if (page.length < options.limit) break;
  }
  return found;
}

function cancelCommand(): Command {
  return new Command('cancel')
    .argument('<runId>', 'run id')
    .description('cancel a run at its next step boundary')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (runId: string, options: ConnectionFlags) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const info = await engine.get(runId);
        if (info && isFinal(info.status)) {
          console.log(`run ${runId} has already ended (${info.status}): nothing to cancel`);
          return;
        }
        await engine.cancel(runId, { by: 'cli' });
        console.log(`cancel requested for run ${runId}`);
      });
    });
}
