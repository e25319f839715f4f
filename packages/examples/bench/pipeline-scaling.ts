/**
 * Documents per second of the document pipeline embedded and on 1, 2, 4... `queueflow worker`
 * processes, each run as a user would: the pipeline CLI (`dist/cli/pipeline.js`, with `--redis`
 * for the distributed runs) against workers started with `queueflow worker --flows
 * dist/flows.js`, which are ready before the run starts (each loads the NLP model and reads the
 * cached classifier at its first document, about a second, inside the measured run). Each trial uses its own key
 * prefix, deleted afterwards. Trials go round-robin over the set-ups, so that a machine busy with
 * other work slows them alike; the figures are the CLI's own (`Throughput` in its report).
 *
 * Needs `npm run build` first and a Redis.
 *
 * ```sh
 * npm run bench:scaling -w @queueflow/examples -- --redis redis://127.0.0.1:6379 --repeats 3 --workers 1,2,4
 * ```
 *
 * With `--desk` (`npm run bench:desk -w @queueflow/examples`), the mail desk instead (`--desk` of
 * the same CLI; mails per second until every agent is idle), and after each distributed trial the
 * Redis memory of its idle agents (MEMORY USAGE of their keys, per agent). The last line is the
 * scaling ratio: the median on the most workers over the median on one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { deletePrefix, inspectingConnection, keysUnder } from '../../../tests/support/redis-prefix.js';

const EXAMPLES = fileURLToPath(new URL('..', import.meta.url));
const PIPELINE = path.join(EXAMPLES, 'dist/cli/pipeline.js');
const FLOWS = path.join(EXAMPLES, 'dist/flows.js');
const QUEUEFLOW = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@queueflow/worker/package.json')),
  'dist/cli.js',
);

interface Options {
  redis: string;
  repeats: number;
  workers: number[];
  limit?: number;
  concurrency: number;
  workerConcurrency: number;
  desk?: boolean;
}

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`expected an integer from 1 and up, got '${value}'`);
  return n;
}

const options = new Command()
  .option('--redis <url>', 'Redis for the distributed runs', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  .option('--repeats <n>', 'trials per set-up', positiveInteger, 3)
  .option('--workers <list>', 'worker counts, comma-separated', (v) => v.split(',').map(positiveInteger), [1, 2, 4])
  .option('--limit <n>', 'documents (default: the whole corpus)', positiveInteger)
  .option('--concurrency <n>', 'documents in flight (distributed: across the workers)', positiveInteger, 64)
  .option('--worker-concurrency <n>', 'steps at once per worker', positiveInteger, 8)
  .option('--desk', 'the mail desk instead of the document pipeline (default --limit: the desk sample of 1,000 mails)')
  .parse()
  .opts<Options>();

interface Trial {
  setup: string;
  docsPerSecond: number;
  seconds: number;
  accuracy: string | undefined;
  /** The desk on workers: Redis bytes per idle agent at its end. */
  bytesPerAgent?: number;
}

/** What one item is called: documents for the pipeline, mails for the desk. */
const UNIT = options.desk ? 'mails' : 'docs';

async function main(): Promise<void> {
  const setups = ['embedded', ...options.workers.map((n) => `${n} worker${n === 1 ? '' : 's'}`)];
  const counts = [0, ...options.workers];
  const trials: Trial[] = [];
  for (let repeat = 1; repeat <= options.repeats; repeat++) {
    for (const [i, workers] of counts.entries()) {
      const trial = workers === 0 ? await embedded() : await distributed(workers);
      trial.setup = setups[i]!;
      trials.push(trial);
      const detail = options.desk
        ? trial.bytesPerAgent === undefined
          ? ''
          : `; ${trial.bytesPerAgent} bytes of Redis per idle agent`
        : `; held-out accuracy ${trial.accuracy ?? '?'}`;
      console.log(
        `trial ${repeat}/${options.repeats}  ${trial.setup.padEnd(10)} ${trial.docsPerSecond.toFixed(1).padStart(7)} ${UNIT}/s  (${trial.seconds.toFixed(1)} s${detail})`,
      );
    }
  }
  const what = options.desk ? 'mails' : 'documents';
  console.log(
    `\n${options.limit ?? (options.desk ? 'the sample of' : 'all')} ${what}, ${options.repeats} trials each; min / median / max ${what} per second`,
  );
  const medians = new Map<string, number>();
  for (const setup of setups) {
    const rates = trials
      .filter((t) => t.setup === setup)
      .map((t) => t.docsPerSecond)
      .sort((a, b) => a - b);
    const median = rates[Math.floor(rates.length / 2)]!;
    medians.set(setup, median);
    console.log(
      `  ${setup.padEnd(10)} ${rates[0]!.toFixed(1).padStart(7)} / ${median.toFixed(1).padStart(7)} / ${rates.at(-1)!.toFixed(1).padStart(7)}`,
    );
  }
  const most = Math.max(...options.workers);
  const one = medians.get('1 worker');
  if (one !== undefined && most > 1)
    console.log(`scaling: ${most} workers / 1 worker = ${(medians.get(`${most} workers`)! / one).toFixed(2)}`);
}

function selection(): string[] {
  if (options.desk) return ['--desk', ...(options.limit ? ['--limit', String(options.limit)] : [])];
  return options.limit ? ['--limit', String(options.limit)] : ['--all'];
}

async function embedded(): Promise<Trial> {
  return parseReport(await runCli([...selection(), ...(options.desk ? [] : ['--concurrency', '8'])]));
}

async function distributed(count: number): Promise<Trial> {
  const prefix = `{qf-bench-${process.pid}-${Date.now()}}`;
  const workers: ChildProcess[] = [];
  try {
    for (let i = 0; i < count; i++) workers.push(await startWorker(prefix));
    const trial = parseReport(
      await runCli([
        ...selection(),
        '--redis',
        options.redis,
        '--prefix',
        prefix,
        '--concurrency',
        String(options.concurrency),
      ]),
    );
    if (options.desk) trial.bytesPerAgent = await bytesPerAgent(prefix);
    return trial;
  } finally {
    await Promise.all(workers.map(stop));
    await deletePrefix(options.redis, prefix);
  }
}

/**
 * Redis bytes per agent left under `prefix` (the desk's, all idle at its end): MEMORY USAGE of the
 * agents' hashes (`<prefix>:agent:<type>/<key>`) and of their index entries' share, over their count.
 */
async function bytesPerAgent(prefix: string): Promise<number> {
  const redis = inspectingConnection(options.redis);
  try {
    let bytes = 0;
    let agents = 0;
    for (const key of await keysUnder(redis, prefix)) {
      if (!/:agent:[^:]+\/[^:]+$/.test(key)) continue; // an agent's hash, not its history or inbox
      agents += 1;
      bytes += (await redis.memory('USAGE', key)) ?? 0;
    }
    return agents === 0 ? 0 : Math.round(bytes / agents);
  } finally {
    redis.disconnect();
  }
}

/** Starts a worker and resolves once it is ready. */
function startWorker(prefix: string): Promise<ChildProcess> {
  const args = [
    QUEUEFLOW,
    'worker',
    '--flows',
    FLOWS,
    '--redis',
    options.redis,
    '--prefix',
    prefix,
    '--concurrency',
    String(options.workerConcurrency),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(': ready')) resolve(child);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready:\n${output}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function runCli(args: string[]): Promise<string> {
  const child = spawn(
    process.execPath,
    [PIPELINE, ...args, '--out', path.join(EXAMPLES, 'out/bench.jsonl'), '--no-progress'],
    {
      cwd: EXAMPLES,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`pipeline ${args.join(' ')} exited with ${code}:\n${stderr}`);
  return stdout;
}

function parseReport(report: string): Trial {
  const throughput = /Throughput +([\d.]+) (?:documents|mails)\/s +\(([\d.]+) s/.exec(report);
  if (!throughput) throw new Error(`no Throughput line in the report:\n${report}`);
  const accuracy = /accuracy ([\d.]+%)/.exec(report)?.[1];
  return { setup: '', docsPerSecond: Number(throughput[1]), seconds: Number(throughput[2]), accuracy };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
