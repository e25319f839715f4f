import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { compiledModule } from './compiled-module.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));

export interface WorkerProcessOptions {
  /** Path of a module exporting FlowDefinitions (TypeScript is compiled first: compiled-module.ts). */
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
  /** More arguments of `queueflow worker` (`--log-format json`, `--metrics-port 9464`). */
  args?: string[];
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
  /** `--exit-on-unreachable`: exit when Redis cannot be reached at start instead of waiting. */
  exitOnUnreachable?: boolean;
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

/** A worker process whose output can be awaited. */
export interface WatchedWorkerProcess extends WorkerProcess {
  /**
   * Resolves once the process has printed `text` (stdout or stderr).
   * @throws Error with everything it printed when it exits first.
   */
  printed(text: string): Promise<void>;
}

/**
 * Starts a worker process and resolves once it has printed that it is ready.
 * @throws Error with everything it printed when it exits first, or is not ready within `readyTimeoutMs`.
 */
export async function spawnWorker(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const worker = startWorkerProcess(options);
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  let deadline: NodeJS.Timeout | undefined;
  await Promise.race([
    worker.printed(': ready'),
    new Promise<never>((_, reject) => {
      deadline = setTimeout(() => {
        worker.kill('SIGKILL');
        reject(new Error(`worker not ready after ${readyTimeoutMs} ms (killed); it printed:\n${worker.output()}`));
      }, readyTimeoutMs);
    }),
  ]).finally(() => clearTimeout(deadline));
  return worker;
}

/**
 * Starts a worker process and returns at once, before it is ready (a test that starts its Redis
 * later): `printed(': ready')` says when it is.
 */
export function startWorkerProcess(options: WorkerProcessOptions): WatchedWorkerProcess {
  const args = [
    ...(options.preload ? ['--import', pathToFileURL(compiledModule(options.preload)).href] : []),
    CLI,
    'worker',
    '--flows',
    compiledModule(options.flows),
    ...(options.cluster ? ['--cluster', options.cluster.join(',')] : ['--redis', options.redisUrl]),
    '--prefix',
    options.prefix,
  ];
  if (options.concurrency) args.push('--concurrency', String(options.concurrency));
  if (options.partitions) args.push('--partitions', String(options.partitions));
  if (options.queues) args.push('--queues', options.queues.join(','));
  if (options.lockDurationMs) args.push('--lock-duration', String(options.lockDurationMs));
  if (options.stalledIntervalMs) args.push('--stalled-interval', String(options.stalledIntervalMs));
  if (options.exitOnUnreachable) args.push('--exit-on-unreachable');
  if (options.args) args.push(...options.args);
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_NO_WARNINGS: '1', ...options.env },
  });
  let output = '';
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  /** Texts awaited by `printed`, resolved as the output grows. */
  const awaited = new Set<{ text: string; resolve: () => void }>();
  const onData = (chunk: Buffer): void => {
    output += chunk.toString();
    for (const wait of awaited) if (output.includes(wait.text)) wait.resolve();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const printed = (text: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (output.includes(text)) return resolve();
      const wait = {
        text,
        resolve: () => {
          awaited.delete(wait);
          resolve();
        },
      };
      awaited.add(wait);
      // Not awaited: `exited` never rejects, and once printed this late reject() is a no-op.
      void exited.then((code) => {
        awaited.delete(wait);
        reject(new Error(`worker exited (${code}) before it printed '${text}':\n${output}`));
      });
    });
  return {
    child,
    pid: child.pid!,
    output: () => output,
    exited,
    kill: (signal) => child.kill(signal),
    printed,
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
