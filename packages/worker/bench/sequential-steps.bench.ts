/**
 * Distributed step latency: steps per second of a 1,000-step sequential flow on RedisEngine vs
 * raw BullMQ jobs chained the same way (each job's processor adds the next), on the same Redis,
 * both in this one process with one worker at concurrency 1. Printed as a ratio, for the worker's
 * defaults (a job runs up to 50 steps of its run in a row: `continueSteps`) and, beside it, with a
 * BullMQ job per step (`continueSteps: 0`), which is what a run's steps cost when each one goes
 * back through the queue (a step on another queue, a chain's end).
 *
 * Usage: npm run bench -w @queueflow/worker [-- --steps 1000 --rounds 3]   (REDIS_URL selects Redis)
 */
import { parseArgs } from 'node:util';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, Node, setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { chainedBullmqRate, deleteKeys, formatRate, redisUrl } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: { steps: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '3' } },
});
const steps = Number(values.steps);
const rounds = Number(values.rounds);
setWarningHandler(() => {});

interface Counter {
  count: number;
  limit: number;
}
class Tick extends Node<Counter> {
  override post(shared: Counter): string | undefined {
    shared.count += 1;
    return shared.count < shared.limit ? 'again' : undefined;
  }
}
const chain = defineFlow('bench-chain', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

async function queueflowRound(continueSteps?: number): Promise<number> {
  const prefix = `{bench-qf-${nanoid(6)}}`;
  const worker = await startWorker({
    connection: redisUrl(),
    flows: [chain],
    prefix,
    concurrency: 1,
    ...(continueSteps === undefined ? {} : { continueSteps }),
  });
  const engine = new RedisEngine({ connection: redisUrl(), flows: [chain], prefix });
  try {
    const started = performance.now();
    const result = await engine.run(chain, { count: 0, limit: steps });
    const seconds = (performance.now() - started) / 1000;
    if (result.status !== 'completed' || result.shared.count !== steps)
      throw new Error(`queueflow run failed: ${JSON.stringify(result.error)}`);
    return steps / seconds;
  } finally {
    await engine.close();
    await worker.close();
    await deleteKeys(prefix);
  }
}

const ours: number[] = [];
const jobPerStep: number[] = [];
const raw: number[] = [];
await chainedBullmqRate(steps); // warm-up: module loading, script loading
await queueflowRound();
for (let round = 0; round < rounds; round++) {
  raw.push(await chainedBullmqRate(steps));
  ours.push(await queueflowRound());
  jobPerStep.push(await queueflowRound(0));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`sequential flow, ${steps} steps, 1 worker at concurrency 1, median of ${rounds} rounds`);
console.log(`  queueflow RedisEngine            : ${formatRate(median(ours))} steps/s`);
console.log(`  queueflow, a job per step        : ${formatRate(median(jobPerStep))} steps/s (continueSteps: 0)`);
console.log(`  raw BullMQ chained               : ${formatRate(median(raw))} jobs/s`);
console.log(
  `  ratio                            : ${(median(ours) / median(raw)).toFixed(2)} (queueflow / BullMQ; the bar is ≥ 1.0)`,
);
console.log(
  `  ratio, a job per step            : ${(median(jobPerStep) / median(raw)).toFixed(2)} (queueflow / BullMQ)`,
);
recordFigure({ name: 'sequential.ratio', value: median(ours) / median(raw), unit: '×', better: 'higher', bar: 1 });
recordFigure({
  name: 'sequential.ratio-job-per-step',
  value: median(jobPerStep) / median(raw),
  unit: '×',
  better: 'higher',
});
recordFigure({ name: 'sequential.queueflow', value: median(ours), unit: 'steps/s', better: 'higher' });
recordFigure({ name: 'sequential.bullmq', value: median(raw), unit: 'jobs/s', better: 'higher' });
