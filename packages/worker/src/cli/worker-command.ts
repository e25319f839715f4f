import { Command } from 'commander';
import { loadFlows } from '../load-flows.js';
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
import { DEFAULT_QUEUE, type FlowDefinition } from '@queueflow/runtime';

/**
 * What a worker's ready line says of it: where (the Redis or the cluster, no password), the
 * prefix, the partitions it serves, its queues, flows and concurrency.
 */
export function readyLine(
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
    .action(
      async (
        options: ConnectionFlags & {
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
        const flows = await loadFlows(options.flows);
        // Before it is ready, a failed start is reported once, by the error startWorker throws.
        let ready = false;
        const logError = throttledLog((line) => console.error(`queueflow worker ${process.pid}: ${line}`), 10_000);
        const worker = await startWorker({
          connection: connectionOf(options),
          onError: (error) => ready && logError(error.message),
          flows,
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
        console.log(`queueflow worker ${process.pid}: ready ${readyLine(options, worker.partitions, flows)}`);
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
}
