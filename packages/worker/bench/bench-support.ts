import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { deletePrefix } from '../../../tests/support/redis-prefix.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** The Redis the benchmarks use: `REDIS_URL`, else the local default. */
export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** Deletes every key under `prefix` of the benchmarks' Redis. */
export function deleteKeys(prefix: string): Promise<void> {
  return deletePrefix(redisUrl(), prefix);
}

export function formatRate(perSecond: number): string {
  return Math.round(perSecond).toLocaleString('en-US');
}

/** Starts `queueflow worker` for the flows module `flows` (a path) in a process of its own; resolves once ready. */
export function startWorkerProcess(prefix: string, flows: string, concurrency: number): Promise<ChildProcess> {
  const args = ['--import', 'tsx', CLI, 'worker', '--flows', flows, '--redis', redisUrl(), '--prefix', prefix];
  const child = spawn(process.execPath, [...args, '--concurrency', String(concurrency)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  });
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(': ready')) resolve(child);
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready:\n${output}`)));
  });
}

/** Stops a worker process (SIGTERM: it finishes its steps) and resolves once it has exited. */
export function stopWorkerProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * The baseline of the sequential benchmarks: jobs per second of `steps` raw BullMQ jobs chained
 * one after the other (each job's processor adds the next), one worker at concurrency 1.
 */
export async function chainedBullmqRate(steps: number): Promise<number> {
  const prefix = `{bench-bull-${nanoid(6)}}`;
  const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
  const queue = new Queue('chain', { connection, prefix });
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const workerConnection = connection.duplicate(); // BullMQ leaves it open: closed below
  const worker = new Worker(
    'chain',
    async (job) => {
      const n = (job.data as { n: number }).n;
      if (n >= steps) return done();
      await queue.add('step', { n: n + 1 }, { jobId: `chain-${n + 1}`, removeOnComplete: true });
    },
    { connection: workerConnection, prefix, concurrency: 1 },
  );
  await worker.waitUntilReady();
  try {
    const started = performance.now();
    await queue.add('step', { n: 1 }, { jobId: 'chain-1', removeOnComplete: true });
    await finished;
    return steps / ((performance.now() - started) / 1000);
  } finally {
    await worker.close();
    await queue.close();
    connection.disconnect();
    workerConnection.disconnect();
    await deleteKeys(prefix);
  }
}
