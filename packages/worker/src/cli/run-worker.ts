import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { DEFAULT_QUEUE, setWarningHandler, type FlowDefinition } from '@queueflow/runtime';
import { setStepListener, type StepEvent } from '@queueflow/runtime/kernel';
import { loadFlowsModule } from '../load-flows.js';
import { RedisEngine } from '../redis-engine.js';
import { throttledLog } from '../throttled-log.js';
import { startWorker, type QueueflowWorker } from '../worker.js';
import { createLogger } from './create-logger.js';
import type { LogFlags } from './log-flags.js';
import { connectionOf, describeConnection, type ConnectionFlags } from './options.js';
import { serveMetrics, type MetricsServer } from './serve-metrics.js';

/** The options of `queueflow worker`. */
export type WorkerFlags = ConnectionFlags &
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
  };

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
 * Runs `queueflow worker` with its options: starts the worker, logs that it is ready, and on
 * SIGTERM or SIGINT lets the steps in flight finish first (a second signal exits at once).
 */
export async function runWorker(options: WorkerFlags): Promise<void> {
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
}
