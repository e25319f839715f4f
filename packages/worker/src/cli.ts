#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  toMermaid,
  type FlowDefinition,
  type Json,
  type JsonObject,
  type RunResult,
  type RunStatus,
} from '@queueflow/runtime';
import { loadFlows } from './load-flows.js';
import { RedisEngine } from './redis-engine.js';
import { throttledLog } from './throttled-log.js';
import { isFinal } from '@queueflow/runtime/kernel';
import { startWorker } from './worker.js';
import { addStudioCommand } from './cli/studio-command.js';

/**
 * The `queueflow` command: start workers; start, inspect, list and cancel runs; send messages;
 * print a flow's graph.
 * `REDIS_URL` is the default connection everywhere.
 */
const program = new Command()
  .name('queueflow')
  .description('Run queueflow flows over Redis: workers and runs')
  .showHelpAfterError();

const redisOption = (): Option =>
  new Option('--redis <url>', 'Redis URL (redis:// or rediss://)').env('REDIS_URL').default('redis://127.0.0.1:6379');
const DEFAULT_PREFIX = '{qf}';
const prefixOption = (): Option =>
  new Option('--prefix <prefix>', 'key prefix shared by clients and workers').default(DEFAULT_PREFIX);

program
  .command('worker')
  .description('start a worker that takes steps of the flows a module exports')
  .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow)')
  .addOption(redisOption())
  .addOption(prefixOption())
  .option('--concurrency <n>', 'steps run at once', positiveInteger, 8)
  .option('--lock-duration <ms>', 'step lock duration in ms; a dead worker loses its steps after it', positiveInteger)
  .option(
    '--stalled-interval <ms>',
    'how often to look for stalled steps, in ms (default: half the lock duration)',
    positiveInteger,
  )
  .action(
    async (options: {
      flows: string;
      redis: string;
      prefix: string;
      concurrency: number;
      lockDuration?: number;
      stalledInterval?: number;
    }) => {
      const flows = await loadFlows(options.flows);
      // Before it is ready, a failed start is reported once, by the error startWorker throws.
      let ready = false;
      const logError = throttledLog((line) => console.error(`queueflow worker ${process.pid}: ${line}`), 10_000);
      const worker = await startWorker({
        connection: options.redis,
        onError: (error) => ready && logError(error.message),
        flows,
        prefix: options.prefix,
        concurrency: options.concurrency,
        ...(options.lockDuration ? { lockDurationMs: options.lockDuration } : {}),
        ...(options.stalledInterval ? { stalledIntervalMs: options.stalledInterval } : {}),
      });
      ready = true;
      const names = flows.map((f) => f.name).join(', ');
      console.log(`queueflow worker ${process.pid}: ready (flows: ${names}; concurrency ${options.concurrency})`);
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) {
          console.error(`queueflow worker ${process.pid}: ${signal} again, exiting now`);
          process.exit(1);
        }
        stopping = true;
        console.log(`queueflow worker ${process.pid}: ${signal}, finishing steps in flight`);
        worker.close().then(
          () => process.exit(0),
          (error: unknown) => {
            console.error(error);
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
    },
  );

program
  .command('run <flow>')
  .description('start a run and wait for it (or print its id with --detach)')
  .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow)')
  .option('--shared <json>', 'initial shared store, JSON', parseJsonObject, {})
  .option('--params <json>', 'params, JSON', parseJsonObject, {})
  .option('--detach', 'print the run id and exit without waiting')
  .addOption(redisOption())
  .addOption(prefixOption())
  .action(
    async (
      flow: string,
      options: {
        flows: string;
        shared: JsonObject;
        params: JsonObject;
        detach?: boolean;
        redis: string;
        prefix: string;
      },
    ) => {
      const engine = openEngine(options, await loadFlows(options.flows));
      try {
        const handle = await engine.start(flow, options.shared, { params: options.params });
        if (options.detach) {
          console.log(handle.id);
          return;
        }
        console.error(`run ${handle.id} started`);
        const result = await awaitResult(engine, handle.id, options);
        console.log(JSON.stringify(result, null, 2));
        process.exitCode = result.status === 'completed' ? 0 : 1;
      } finally {
        await engine.close();
      }
    },
  );

program
  .command('status <runId>')
  .description("print a run's status, current node, attempts, error and timings")
  .addOption(redisOption())
  .addOption(prefixOption())
  .action(async (runId: string, options: { redis: string; prefix: string }) => {
    const engine = openEngine(options);
    try {
      const info = await engine.get(runId);
      if (!info) {
        console.error(`queueflow: no run '${runId}' under prefix '${options.prefix}' (never started, or expired)`);
        process.exitCode = 1;
        return;
      }
      console.log(JSON.stringify(info, null, 2));
    } finally {
      await engine.close();
    }
  });

program
  .command('wait <runId>')
  .description('wait for a run to end and print its result')
  .addOption(redisOption())
  .addOption(prefixOption())
  .action(async (runId: string, options: { redis: string; prefix: string }) => {
    const engine = openEngine(options);
    try {
      const result = await awaitResult(engine, runId, options);
      console.log(JSON.stringify(result, null, 2));
      process.exitCode = result.status === 'completed' ? 0 : 1;
    } finally {
      await engine.close();
    }
  });

program
  .command('send')
  .description('send a message (JSON) to a mailbox, e.g. to answer an agent')
  .argument('<address>', 'mailbox address')
  .argument('<json>', 'message body, JSON', parseJson)
  .addOption(redisOption())
  .addOption(prefixOption())
  .action(async (address: string, body: Json, options: { redis: string; prefix: string }) => {
    const engine = openEngine(options);
    try {
      await engine.send(address, body);
      console.log(`sent to ${address}`);
    } finally {
      await engine.close();
    }
  });

program
  .command('list')
  .description('list runs, newest first')
  .addOption(
    new Option('--status <status>', 'only runs with this status').choices([
      'queued',
      'running',
      'waiting',
      'completed',
      'failed',
      'cancelled',
    ]),
  )
  .option('--limit <n>', 'most runs listed', positiveInteger, 20)
  .addOption(redisOption())
  .addOption(prefixOption())
  .action(async (options: { status?: RunStatus; limit: number; redis: string; prefix: string }) => {
    const engine = openEngine(options);
    try {
      const runs = await engine.list({ limit: options.limit, ...(options.status ? { status: options.status } : {}) });
      for (const run of runs) {
        const at = new Date(run.createdAt).toISOString();
        console.log(
          `${run.id}  ${run.flow}  ${run.status.padEnd(9)}  steps ${run.steps}  ${at}${run.error ? `  ${run.error.message}` : ''}`,
        );
      }
    } finally {
      await engine.close();
    }
  });

program
  .command('cancel <runId>')
  .description('cancel a run at its next step boundary')
  .addOption(redisOption())
  .addOption(prefixOption())
  .action(async (runId: string, options: { redis: string; prefix: string }) => {
    const engine = openEngine(options);
    try {
      const info = await engine.get(runId);
      if (info && isFinal(info.status)) {
        console.log(`run ${runId} has already ended (${info.status}): nothing to cancel`);
        return;
      }
      await engine.cancel(runId);
      console.log(`cancel requested for run ${runId}`);
    } finally {
      await engine.close();
    }
  });

program
  .command('graph <flow>')
  .description("print a flow's graph as a Mermaid flowchart (node ids as runs report them)")
  .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow)')
  .addOption(new Option('--direction <direction>', 'flowchart direction').choices(['TD', 'LR']).default('TD'))
  .action(async (flow: string, options: { flows: string; direction: 'TD' | 'LR' }) => {
    const flows = await loadFlows(options.flows);
    const definition = flows.find((candidate) => candidate.name === flow);
    if (!definition)
      throw new Error(
        `flows module '${options.flows}' has no flow '${flow}' (it has: ${flows.map((f) => f.name).join(', ')})`,
      );
    console.log(toMermaid(definition, { direction: options.direction }));
  });

addStudioCommand(program, { redis: redisOption, prefix: prefixOption });

/** How long a run may sit queued before `run`/`wait` say that no worker has taken it, in ms. */
const QUEUED_HINT_MS = 10_000;

/**
 * The run's result, as `engine.result`, and meanwhile: a hint on stderr when the run is still
 * queued after {@link QUEUED_HINT_MS} (no worker, or workers refusing it: their reason is shown),
 * and on Ctrl-C a word that the run goes on (exit 130).
 */
async function awaitResult(
  engine: RedisEngine,
  runId: string,
  options: { flows?: string; prefix: string },
): Promise<RunResult> {
  let said = '';
  const hint = setInterval(() => {
    // Not awaited: a hint on a timer, independent of the wait below.
    void engine.get(runId).then(
      (info) => {
        if (info?.status !== 'queued') return;
        const start = `queueflow worker --flows ${options.flows ?? '<module>'} --prefix '${options.prefix}'`;
        const message = info.refusal
          ? `run ${runId} is still queued: a worker refused its step: ${info.refusal}`
          : `run ${runId} is still queued: no worker has taken it yet. Is one running? Start one with: ${start}`;
        if (message !== said) console.error((said = message));
      },
      () => {}, // a failed poll says nothing; the wait itself reports real trouble
    );
  }, QUEUED_HINT_MS);
  const interrupted = (): void => {
    const prefix = options.prefix === DEFAULT_PREFIX ? '' : ` --prefix '${options.prefix}'`;
    console.error(
      `\ninterrupted: run ${runId} goes on without this command; \`queueflow cancel ${runId}${prefix}\` stops it`,
    );
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  try {
    return await engine.result(runId);
  } finally {
    clearInterval(hint);
    process.off('SIGINT', interrupted);
  }
}

/** A client engine for a command that needs no flows, or the given ones. */
function openEngine(options: { redis: string; prefix: string }, flows: FlowDefinition[] = []): RedisEngine {
  return new RedisEngine({ connection: options.redis, flows, prefix: options.prefix });
}

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1)
    throw new InvalidArgumentError(`expected an integer from 1 and up, got '${value}'`);
  return number;
}

function parseJson(value: string): Json {
  try {
    return JSON.parse(value) as Json;
  } catch (error) {
    throw new InvalidArgumentError(`not JSON: ${(error as Error).message}`);
  }
}

function parseJsonObject(value: string): JsonObject {
  const parsed = parseJson(value);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new InvalidArgumentError('expected a JSON object');
  return parsed as JsonObject;
}

program.parseAsync().catch((error: unknown) => {
  console.error(`queueflow: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
