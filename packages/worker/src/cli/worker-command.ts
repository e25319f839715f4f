import { Command } from 'commander';
import { loadFlowsModule } from '../load-flows.js';
import { throttledLog } from '../throttled-log.js';
import { startWorker, type QueueflowWorker } from '../worker.js';
import {
  clusterOption,
  connectionOf,
  describeConnection,
  nonNegativeInteger,
  partitionList,
  positiveInteger,
  prefixOption,
  queueList,
  redisOption,
  type ConnectionFlags,
} from './options.js';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { DEFAULT_QUEUE, setWarningHandler, type FlowDefinition } from '@queueflow/runtime';
import { setStepListener, type StepEvent } from '@queueflow/runtime/kernel';
import { RedisEngine } from '../redis-engine.js';
import { createLogger, logFormatOption, logLevelOption, type LogFlags } from './create-logger.js';
import { serveMetrics, type MetricsServer } from './serve-metrics.js';

/** A try of a step as a log line: its start and success at debug level, a failed try as a warning. */
function logStep(log: Logger, event: StepEvent): void {
  const { type, runId, step, node, attempt, flow, item } = event;
  const fields = { runId, step, node, attempt, flow, ...(item === undefined ? {} : { item }) };
  const what = `step #${step} ${node}${item === undefined ? '' : ` item ${item}`} of run ${runId}, try ${attempt + 1}`;
  if (type === 'started') return void log.debug(fields, `${what}: started`);
  const ended = { ...fields, outcome: event.outcome, durationMs: Math.round(event.durationMs * 10) / 10 };
  if (event.error) {
    log.warn({ ...ended, error: event.error }, `${what}: ${event.outcome} (${event.error.message})`);
  } else log.debug(ended, `${what}: ${event.outcome} in ${ended.durationMs} ms`);
}

/** Serves /metrics, with the budgets read by a client of the worker's deployment. */
async function startMetrics(options: ConnectionFlags & { metricsHost: string }, port: number): Promise<MetricsServer> {
  const engine = new RedisEngine({ connection: connectionOf(options), flows: [], prefix: options.prefix });
  const server = await serveMetrics(port, options.metricsHost, () => engine.budgets());
  return {
    url: server.url,
    close: async () => {
      await server.close();
      await engine.close();
    },
  };
}

/**
 * What a worker's ready line says of it: where (the Redis or the cluster, no password), the
 * prefix, the partitions it serves, its queues, flows and concurrency.
 */
function readyLine(
  options: ConnectionFlags & { concurrency: number; queues?: string[] },
  partitions: QueueflowWorker['partitions'],
  flows: readonly FlowDefinition[],
): string {
  const served =
    partitions.served.length === partitions.count ? 'all served' : `serving ${partitions.served.join(', ')}`;
  return (
    `on ${describeConnection(options)} (prefix '${options.prefix}'; partitions: ${partitions.count}, ${served}; ` +
    `queues: ${(options.queues ?? [DEFAULT_QUEUE]).join(', ')}; flows: ${flows.map((f) => f.name).join(', ')}; ` +
    `concurrency ${options.concurrency})`
  );
}

/**
 * `queueflow worker`: a worker process for the flows a module exports. Started while Redis cannot
 * be reached, it waits for Redis, one line per wait (`--exit-on-unreachable`: exits at once).
 * SIGTERM or SIGINT lets the steps in flight finish first; a second signal exits at once.
 */
export function workerCommand(): Command {
  return new Command('worker')
    .description('start a worker that takes steps of the flows a module exports')
    .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow); a .ts file runs through tsx')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .option('--concurrency <n>', 'steps run at once, on each queue served', positiveInteger, 8)
    .option(
      '--partitions <n>',
      'partitions of the store (stored once: must match the stored count; default: the stored one, else 16 on a cluster and 1 on one server)',
      positiveInteger,
    )
    .option('--serve-partitions <list>', 'partitions served, comma-separated (default: every one)', partitionList)
    .option(
      '--queues <names>',
      "queues served, comma-separated: steps of nodes whose `queue` is one of them (default: 'default')",
      queueList,
    )
    .option('--lock-duration <ms>', 'step lock duration in ms; a dead worker loses its steps after it', positiveInteger)
    .option(
      '--continue-steps <n>',
      'steps of a run a worker may run one after another without a job each (0: a job per step; default 50)',
      nonNegativeInteger,
    )
    .option(
      '--exit-on-unreachable',
      'exit (status 1) when Redis cannot be reached at start, instead of waiting for it with backoff',
    )
    .option(
      '--stalled-interval <ms>',
      'how often to look for stalled steps, in ms (default: half the lock duration)',
      positiveInteger,
    )
    .option(
      '--max-loop-lag <ms>',
      'how long the main event loop may not turn (a long synchronous step, CPU starvation) and the worker still count as live, in ms (default 60000)',
      positiveInteger,
    )
    .addOption(logFormatOption())
    .addOption(logLevelOption())
    .option(
      '--metrics-port <port>',
      "serve the worker's OpenTelemetry metrics in Prometheus' text format on http://<host>:<port>/metrics",
      nonNegativeInteger,
    )
    .option('--metrics-host <host>', 'the address --metrics-port listens on', '0.0.0.0')
    .action(
      async (
        options: ConnectionFlags &
          LogFlags & {
            metricsPort?: number;
            metricsHost: string;
            flows: string;
            concurrency: number;
            queues?: string[];
            maxLoopLag?: number;
            lockDuration?: number;
            stalledInterval?: number;
            continueSteps?: number;
            partitions?: number;
            servePartitions?: number[];
            exitOnUnreachable?: boolean;
          },
      ) => {
        const { flows, agents } = await loadFlowsModule(options.flows);
        const me = `queueflow worker ${process.pid}`;
        const log = createLogger(options, { worker: `${hostname()}:${process.pid}` });
        // Every line about a try of a step names the run, step, node and attempt (and the worker).
        setStepListener((event) => logStep(log, event));
        setWarningHandler((code, message) => log.warn({ code }, message));
        const metricsServer =
          options.metricsPort === undefined ? undefined : await startMetrics(options, options.metricsPort);
        // Before it is ready, a failed start is reported once, by the error startWorker throws.
        let ready = false;
        // A signal before it is ready (still waiting for Redis, say) ends it at once: no step
        // has started yet.
        let stopOnSignal = (signal: string): void => {
          log.info(`${me}: ${signal} before it was ready, exiting`);
          process.exit(0);
        };
        process.on('SIGTERM', () => stopOnSignal('SIGTERM'));
        process.on('SIGINT', () => stopOnSignal('SIGINT'));
        const logError = throttledLog((line) => log.error(`${me}: ${line}`), 10_000);
        const worker = await startWorker({
          connection: connectionOf(options),
          onError: (error) => ready && logError(error.message),
          onLog: (line) => log.info(`${me}: ${line}`),
          flows,
          agents,
          prefix: options.prefix,
          concurrency: options.concurrency,
          ...(options.queues ? { queues: options.queues } : {}),
          ...(options.lockDuration ? { lockDurationMs: options.lockDuration } : {}),
          ...(options.maxLoopLag ? { maxLoopLagMs: options.maxLoopLag } : {}),
          ...(options.stalledInterval ? { stalledIntervalMs: options.stalledInterval } : {}),
          ...(options.continueSteps === undefined ? {} : { continueSteps: options.continueSteps }),
          ...(options.partitions === undefined ? {} : { partitions: options.partitions }),
          ...(options.servePartitions ? { servePartitions: options.servePartitions } : {}),
          exitOnUnreachable: options.exitOnUnreachable ?? false,
        });
        ready = true;
        log.info(
          {
            redis: describeConnection(options),
            prefix: options.prefix,
            partitions: worker.partitions.count,
            servedPartitions: worker.partitions.served,
            queues: options.queues ?? [DEFAULT_QUEUE],
            flows: flows.map((flow) => flow.name),
            concurrency: options.concurrency,
            ...(metricsServer ? { metrics: metricsServer.url } : {}),
          },
          `${me}: ready ${readyLine(options, worker.partitions, flows)}`,
        );
        let stopping = false;
        stopOnSignal = (signal: string): void => {
          if (stopping) {
            log.error(`${me}: ${signal} again, exiting now`);
            process.exit(1);
          }
          stopping = true;
          log.info(`${me}: ${signal}, finishing steps in flight`);
          worker
            .close()
            .then(() => metricsServer?.close())
            .then(
              () => process.exit(0),
              (error: unknown) => {
                log.error({ err: error }, `${me}: ${(error as Error).message}`);
                process.exit(1);
              },
            );
        };
      },
    );
}
