import { Command } from 'commander';
import {
  clusterOption,
  nonNegativeInteger,
  partitionList,
  positiveInteger,
  prefixOption,
  queueList,
  redisOption,
} from './options.js';
import { logFormatOption, logLevelOption } from './log-flags.js';
import type { WorkerFlags } from './run-worker.js';

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
    .action(async (options: WorkerFlags) => {
      // Loaded here, not with the CLI: the worker's modules (bullmq, pino, OpenTelemetry) load only to run one.
      const { runWorker } = await import('./run-worker.js');
      await runWorker(options);
    });
}
