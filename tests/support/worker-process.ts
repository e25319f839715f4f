import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));

export interface WorkerProcessOptions {
  /** Path of a module exporting FlowDefinitions (TypeScript is loaded through tsx). */
  flows: string;
  redisUrl: string;
  /** Node URLs of a Redis Cluster: passed as `--cluster` instead of `--redis <redisUrl>`. */
  cluster?: string[];
  /** `--partitions`: the store's partition count. */
  partitions?: number;
  prefix: string;
  concurrency?: number;
  /** Queues served (`--queues`). @defaultValue the worker's: `['default']` */
  queues?: string[];
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** Added to this process's environment. */
  env?: NodeJS.ProcessEnv;
  /**
   * A module the process imports before the CLI (`node --import`): a fault test's injection, such
   * as a patched store method that kills the process at a chosen point.
   */
  preload?: string;
  /**
   * How long the worker may take to print `ready` before it is killed and the start fails with
   * its output, in ms: generous, so a loaded machine fails no test. @defaultValue 60000
   */
  readyTimeoutMs?: number;
}

/** A `queueflow worker` running in its own process, as a user would start it. */
export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** Everything the process printed. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts a worker process and resolves once it has printed that it is ready.
 * @throws Error with everything it printed when it exits first, or is not ready within `readyTimeoutMs`.
 */
export async function spawnWorker(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const args = [
    '--import',
    'tsx',
    ...(options.preload ? ['--import', pathToFileURL(options.preload).href] : []),
    CLI,
    'worker',
    '--flows',
    options.flows,
    ...(options.cluster ? ['--cluster', options.cluster.join(',')] : ['--redis', options.redisUrl]),
    '--prefix',
    options.prefix,
  ];
  if (options.concurrency) args.push('--concurrency', String(options.concurrency));
  if (options.partitions) args.push('--partitions', String(options.partitions));
  if (options.queues) args.push('--queues', options.queues.join(','));
  if (options.lockDurationMs) args.push('--lock-duration', String(options.lockDurationMs));
  if (options.stalledIntervalMs) args.push('--stalled-interval', String(options.stalledIntervalMs));
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_NO_WARNINGS: '1', ...options.env },
  });
  let output = '';
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  let deadline: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes(': ready')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Not awaited: `exited` never rejects, and once ready this late reject() is a no-op.
    void exited.then((code) => reject(new Error(`worker exited (${code}) before it was ready:\n${output}`)));
    deadline = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`worker not ready after ${readyTimeoutMs} ms (killed); it printed:\n${output}`));
    }, readyTimeoutMs);
  }).finally(() => clearTimeout(deadline));
  return {
    child,
    pid: child.pid!,
    output: () => output,
    exited,
    kill: (signal) => child.kill(signal),
  };
}

/**
 * Stops workers with SIGTERM and waits for them to exit; one still running after `killAfterMs`
 * is killed (SIGKILL), so a cleanup hook never hangs on it.
 */
export async function stopWorkers(workers: WorkerProcess[], killAfterMs = 60_000): Promise<void> {
  await Promise.all(
    workers.map(async (worker) => {
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.kill('SIGTERM');
      const timer = setTimeout(() => worker.kill('SIGKILL'), killAfterMs);
      await worker.exited.finally(() => clearTimeout(timer));
    }),
  );
}
