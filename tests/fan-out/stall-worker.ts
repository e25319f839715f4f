/**
 * A worker process with BullMQ's stall settings of the test's choosing (`queueflow worker` has
 * no flag for `maxStalledCount`). Started by the stall tests as
 * `node --import tsx stall-worker.ts '<options JSON>'`; prints `<pid>: ready` when it takes
 * steps, and stops on SIGTERM like the CLI.
 */
import { loadFlows, startWorker } from '@queueflow/worker';

export interface StallWorkerOptions {
  flows: string;
  redisUrl: string;
  prefix: string;
  concurrency: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  maxStalledCount: number;
}

const options = JSON.parse(process.argv[2] ?? '{}') as StallWorkerOptions;
const worker = await startWorker({
  connection: options.redisUrl,
  flows: await loadFlows(options.flows),
  prefix: options.prefix,
  concurrency: options.concurrency,
  lockDurationMs: options.lockDurationMs,
  stalledIntervalMs: options.stalledIntervalMs,
  maxStalledCount: options.maxStalledCount,
  onError: (error) => console.error(`stall worker ${process.pid}: ${error.message}`),
});
console.log(`stall worker ${process.pid}: ready`);
process.once('SIGTERM', () => {
  // Not awaited: a signal listener; the process exits once the worker has closed.
  void worker.close().then(() => process.exit(0));
});
