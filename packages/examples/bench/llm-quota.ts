/**
 * Flow control against a model provider's quota: the document pipeline with LLM summaries on 3
 * `queueflow worker` processes, against the mock model server (an OpenAI-compatible server on
 * loopback that answers 429 with Retry-After beyond its quota), once with the summarise node's
 * `limits` (the default) and once without (`QF_LLM_QUOTA=off` on the workers). It prints, for
 * each: requests answered, 429s, the most requests the mock saw in any window and at once, and the
 * share of the allowed rate used (answered requests over the most a sliding window of `perMs`
 * allows between the first and the last of them: `requests × (⌊span / perMs⌋ + 1)`).
 *
 * Needs `npm run build` first and a Redis.
 *
 * ```sh
 * npm run bench:llm -w @queueflow/examples -- --redis redis://127.0.0.1:6379 --limit 200 --quota 60/10000/2
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { deletePrefix } from '../../../tests/support/redis-prefix.js';
import { MockModelServer, type MockModelStats } from '../src/llm/mock-model-server.js';

const EXAMPLES = fileURLToPath(new URL('..', import.meta.url));
const PIPELINE = path.join(EXAMPLES, 'dist/cli/pipeline.js');
const FLOWS = path.join(EXAMPLES, 'dist/flows.js');
const QUEUEFLOW = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@queueflow/worker/package.json')),
  'dist/cli.js',
);

interface Options {
  redis: string;
  limit: number;
  quota: string;
  workers: number;
  latencyMs: number;
  only?: 'limits' | 'none';
}

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new InvalidArgumentError(`expected an integer from 1 and up, got '${value}'`);
  return n;
}

const options = new Command()
  .option('--redis <url>', 'Redis for the workers', process.env.REDIS_URL ?? 'redis://127.0.0.1:6379')
  .option('--limit <n>', 'documents', positiveInteger, 200)
  .option('--quota <requests/ms/concurrent>', "the mock's quota (and the limits')", '60/10000/2')
  .option('--workers <n>', 'worker processes', positiveInteger, 3)
  .option('--latency-ms <n>', "the mock's time per answer", positiveInteger, 50)
  .option('--only <which>', "'limits' or 'none': one run only")
  .parse()
  .opts<Options>();

const [requests, perMs, concurrent] = options.quota.split('/').map(Number) as [number, number, number];

async function main(): Promise<void> {
  console.log(
    `document pipeline, ${options.limit} documents with LLM summaries, ${options.workers} workers; mock model quota ${requests} requests per ${perMs} ms, ${concurrent} at once, ${options.latencyMs} ms per answer`,
  );
  for (const limits of options.only ? [options.only === 'limits'] : [true, false]) {
    const mock = await MockModelServer.start({ requests, perMs, concurrent, latencyMs: options.latencyMs });
    try {
      const seconds = await run(mock, limits);
      report(limits ? 'with limits' : 'without limits', mock.stats(), seconds);
    } finally {
      await mock.close();
    }
  }
}

async function run(mock: MockModelServer, limits: boolean): Promise<number> {
  const prefix = `{qf-llm-bench-${process.pid}-${Date.now()}}`;
  const env = {
    ...process.env,
    OPENAI_BASE_URL: mock.baseURL,
    OPENAI_API_KEY: 'mock',
    OPENAI_MODEL: 'mock',
    QF_LLM_QUOTA: limits ? options.quota : 'off',
  };
  const workers: ChildProcess[] = [];
  try {
    for (let i = 0; i < options.workers; i++) workers.push(await startWorker(prefix, env));
    const started = Date.now();
    await runCli(['--limit', String(options.limit), '--redis', options.redis, '--prefix', prefix, '--llm'], env);
    return (Date.now() - started) / 1000;
  } finally {
    await Promise.all(workers.map(stop));
    await deletePrefix(options.redis, prefix);
  }
}

function report(what: string, stats: MockModelStats, seconds: number): void {
  const at = stats.okAt;
  const span = at.length > 1 ? at.at(-1)! - at[0]! : 0;
  const allowed = requests * (Math.floor(span / perMs) + 1);
  let maxInWindow = 0;
  for (const [i, start] of at.entries()) {
    let n = 0;
    for (let j = i; j < at.length && at[j]! < start + perMs; j++) n++;
    maxInWindow = Math.max(maxInWindow, n);
  }
  console.log(
    `${what.padEnd(15)} answered ${String(stats.ok).padStart(4)}, 429s ${String(stats.tooManyRequests).padStart(5)} ` +
      `(${stats.overConcurrency} over concurrency), most in a window ${maxInWindow}/${requests}, most at once ${stats.maxConcurrent}/${concurrent}, ` +
      `allowed rate used ${((100 * stats.ok) / Math.max(1, allowed)).toFixed(1)}% (${stats.ok} of ${allowed} in ${(span / 1000).toFixed(1)} s); run ${seconds.toFixed(1)} s`,
  );
}

/** Starts a worker and resolves once it is ready. */
function startWorker(prefix: string, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const args = [QUEUEFLOW, 'worker', '--flows', FLOWS, '--redis', options.redis, '--prefix', prefix];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
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

async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(
    process.execPath,
    [PIPELINE, ...args, '--out', path.join(EXAMPLES, 'out/bench-llm.jsonl'), '--no-progress'],
    { cwd: EXAMPLES, stdio: ['ignore', 'pipe', 'pipe'], env },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`pipeline ${args.join(' ')} exited with ${code}:\n${stderr}`);
  return stdout;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
