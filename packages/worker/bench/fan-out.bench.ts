/**
 * Fan-out throughput: wall time of a ParallelBatchFlow of N no-op children on RedisEngine vs a
 * raw BullMQ FlowProducer parent with N no-op children, on the same Redis, each with one worker
 * in this process at the same concurrency. Printed as a ratio of throughputs.
 *
 * Both rounds count the Redis commands this process sends (ioredis `sendCommand`, Lua scripts by
 * name) and the bytes they and their replies carry: per child, what one child costs. The queueflow count is the worker's, plus the handful
 * the client sends to start the run and hear its end (a few in all, not per child).
 *
 * Usage: tsx bench/fan-out.bench.ts [--children 5000 --concurrency 50 --rounds 3]
 */
import { parseArgs } from 'node:util';
import { FlowProducer, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineFlow, Node, ParallelBatchFlow, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deleteKeys, formatRate, redisUrl } from './bench-support.js';
import { countRedisCommands, perUnit, type CommandCounts } from './redis-command-counter.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
  },
});
const children = Number(values.children);
const concurrency = Number(values.concurrency);
const rounds = Number(values.rounds);
setWarningHandler(() => {});

class NoOp extends Node {}
class Children extends ParallelBatchFlow<{ n: number }> {
  override prep(shared: { n: number }): JsonObject[] {
    return Array.from({ length: shared.n }, (_, i) => ({ i }));
  }
}
const fanOut = defineFlow('bench-fan-out', () => new Children(new NoOp({ name: 'noop' }), { name: 'children' }));

async function queueflowRound(): Promise<number> {
  const prefix = `{bench-qf-${nanoid(6)}}`;
  const worker = await startWorker({ connection: redisUrl(), flows: [fanOut], prefix, concurrency });
  const engine = new RedisEngine({ connection: redisUrl(), flows: [fanOut], prefix });
  try {
    const started = performance.now();
    const result = await engine.run(fanOut, { n: children });
    const seconds = (performance.now() - started) / 1000;
    if (result.status !== 'completed') throw new Error(`queueflow fan-out failed: ${JSON.stringify(result.error)}`);
    return children / seconds;
  } finally {
    await engine.close();
    await worker.close();
    await deleteKeys(prefix);
  }
}

async function flowProducerRound(): Promise<number> {
  const prefix = `{bench-bull-${nanoid(6)}}`;
  const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
  const producer = new FlowProducer({ connection, prefix });
  let done!: () => void;
  const parentDone = new Promise<void>((resolve) => (done = resolve));
  // BullMQ leaves connections it is given open: these are closed below.
  const workerConnections = [connection.duplicate(), connection.duplicate()];
  const workerOptions = { connection: workerConnections[0]!, prefix, concurrency };
  const childWorker = new Worker('children', async () => undefined, workerOptions);
  const parentWorker = new Worker('parent', async () => done(), {
    ...workerOptions,
    connection: workerConnections[1]!,
  });
  await Promise.all([childWorker.waitUntilReady(), parentWorker.waitUntilReady()]);
  try {
    const started = performance.now();
    await producer.add({
      name: 'parent',
      queueName: 'parent',
      opts: { removeOnComplete: true },
      children: Array.from({ length: children }, (_, i) => ({
        name: 'child',
        queueName: 'children',
        data: { i },
        opts: { removeOnComplete: true },
      })),
    });
    await parentDone;
    return children / ((performance.now() - started) / 1000);
  } finally {
    await Promise.all([childWorker.close(), parentWorker.close()]);
    await producer.close();
    connection.disconnect();
    for (const duplicate of workerConnections) duplicate.disconnect();
    await deleteKeys(prefix);
  }
}

const counter = countRedisCommands();
/** Commands of every round of each kind, summed. */
const ourCounts: CommandCounts = {};
const rawCounts: CommandCounts = {};
function collect(into: CommandCounts): void {
  for (const [name, n] of Object.entries(counter.counts)) into[name] = (into[name] ?? 0) + n;
  counter.reset();
}
const ours: number[] = [];
const raw: number[] = [];
for (let round = 0; round < rounds; round++) {
  counter.reset();
  raw.push(await flowProducerRound());
  collect(rawCounts);
  ours.push(await queueflowRound());
  collect(ourCounts);
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `fan-out of ${children} no-op children, 1 worker at concurrency ${concurrency}, median of ${rounds} rounds`,
);
console.log(
  `  queueflow ParallelBatchFlow : ${formatRate(median(ours))} children/s (${(children / median(ours)).toFixed(2)} s)`,
);
console.log(
  `  raw BullMQ FlowProducer     : ${formatRate(median(raw))} children/s (${(children / median(raw)).toFixed(2)} s)`,
);
console.log(
  `  ratio                       : ${(median(ours) / median(raw)).toFixed(2)} (queueflow / FlowProducer; the bar is ≥ 1.0)`,
);
recordFigure({ name: 'fan-out.ratio', value: median(ours) / median(raw), unit: '×', better: 'higher', bar: 1 });
recordFigure({ name: 'fan-out.queueflow', value: median(ours), unit: 'children/s', better: 'higher' });
recordFigure({ name: 'fan-out.flow-producer', value: median(raw), unit: 'children/s', better: 'higher' });
for (const [label, counts] of [
  ['queueflow', ourCounts],
  ['FlowProducer', rawCounts],
] as const) {
  const cost = perUnit(counts, children * rounds);
  console.log(
    `  Redis commands per child, ${label.padEnd(12)}: ${cost.total.toFixed(2)} in ${cost.pipelines.toFixed(2)} pipelines, ` +
      `${cost.bytesOut.toFixed(0)} B out, ${cost.bytesIn.toFixed(0)} B in`,
  );
  console.log(`    ${cost.byKind}`);
  const name = label === 'queueflow' ? 'fan-out.queueflow.commands' : 'fan-out.flow-producer.commands';
  recordFigure({ name, value: cost.total, unit: 'commands/child', better: 'lower' });
  recordFigure({
    name: `${name.replace(/commands$/, 'bytes')}`,
    value: cost.bytesOut + cost.bytesIn,
    unit: 'B/child',
    better: 'lower',
  });
}
