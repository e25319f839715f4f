/**
 * Redis memory that ended runs keep for their retention (issue 32, item 1): a ParallelBatchFlow of
 * N no-op children (default 2,000) at the default retention (7 days), then, once the run has ended,
 * what the keys under the prefix take (MEMORY USAGE of each, SAMPLES 0: every element counted)
 * per child, split by kind of key; and the same for N one-step runs that emitted nothing. What the
 * keys every deployment has (settings, worker registry, BullMQ's queue keys, the runs index) take
 * before is left out; what they grow by is counted.
 *
 * Bar: at most 1,536 bytes per ended no-op fan-out child.
 *
 * Usage: npm run bench -w @queueflow/worker -- retained-memory
 *        (or tsx bench/retained-memory.bench.ts [--children 2000 --runs 500 --concurrency 50];
 *        REDIS_URL selects Redis)
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, Node, ParallelBatchFlow, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deleteKeys, redisUrl } from './bench-support.js';

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '2000' },
    runs: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '50' },
  },
});
const children = Number(values.children);
const runs = Number(values.runs);
const concurrency = Number(values.concurrency);
setWarningHandler(() => {});

/** Bytes per ended no-op fan-out child the issue sets as the bar. */
const BAR_BYTES = 1536;

class NoOp extends Node {}
class Children extends ParallelBatchFlow<{ n: number }> {
  override prep(shared: { n: number }): JsonObject[] {
    return Array.from({ length: shared.n }, (_, i) => ({ i }));
  }
}
const fanOut = defineFlow(
  'bench-retained-fan-out',
  () => new Children(new NoOp({ name: 'noop' }), { name: 'children' }),
);
const oneStep = defineFlow('bench-retained-one-step', () => new Flow(new NoOp({ name: 'noop' })));

/** MEMORY USAGE of every key under `prefix`, by key. */
async function keyBytes(redis: Redis, prefix: string): Promise<Map<string, number>> {
  const bytes = new Map<string, number>();
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>)
    for (const key of keys) bytes.set(key, Number((await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0));
  return bytes;
}

/** The kind of a key, for the breakdown: its name with the run id, hashes and numbers taken out. */
function kindOf(key: string, prefix: string): string {
  return key
    .slice(prefix.length)
    .replace(/^:run:[^:]+/, ':run:<id>')
    .replace(/:[0-9a-f]{64}/g, ':<hash>')
    .replace(/:\d+(?=:|$)/g, ':<n>');
}

/**
 * What the keys grew by since `before` (new keys whole), per `count` runs: the run keys and the
 * runs index (what retention keeps per run), by kind; and apart, what the capped keys grew by
 * (BullMQ's event stream keeps its newest 10,000 events whatever the runs: bounded, not per run).
 */
function perRun(after: Map<string, number>, before: Map<string, number>, prefix: string, count: number) {
  const kinds = new Map<string, number>();
  let total = 0;
  let capped = 0;
  for (const [key, now] of after) {
    const bytes = now - (before.get(key) ?? 0);
    if (bytes === 0) continue;
    const kind = kindOf(key, prefix);
    if (!kind.startsWith(':run')) {
      capped += bytes;
      continue;
    }
    total += bytes;
    kinds.set(kind, (kinds.get(kind) ?? 0) + bytes);
  }
  const breakdown = [...kinds]
    .sort((a, b) => b[1] - a[1])
    .map(([kind, bytes]) => `${kind} ${Math.round(bytes / count)} B`)
    .join(', ');
  return { perRun: total / count, breakdown, capped: capped / count };
}

/** Runs `body` (which returns how many runs it ended) on a prefix of its own: bytes per run. */
async function measure(
  body: (engine: RedisEngine) => Promise<number>,
  redis: Redis,
): Promise<ReturnType<typeof perRun>> {
  const prefix = `{bench-retained-${nanoid(6)}}`;
  const worker = await startWorker({ connection: redisUrl(), flows: [fanOut, oneStep], prefix, concurrency });
  const engine = new RedisEngine({ connection: redisUrl(), flows: [fanOut, oneStep], prefix });
  try {
    await engine.run(oneStep, {}); // the deployment's own keys (settings, queues, registry) exist now
    const before = await keyBytes(redis, prefix);
    const count = await body(engine);
    return perRun(await keyBytes(redis, prefix), before, prefix, count);
  } finally {
    await engine.close();
    await worker.close();
    await deleteKeys(prefix);
  }
}

const redis = new Redis(redisUrl());
try {
  console.log(`retained memory: Redis bytes per ended run at the default retention (MEMORY USAGE of its keys)`);
  const child = await measure(async (engine) => {
    const result = await engine.run(fanOut, { n: children });
    if (result.status !== 'completed') throw new Error(`fan-out failed: ${JSON.stringify(result.error)}`);
    return children; // the parent's keys are counted in, spread over its children
  }, redis);
  console.log(
    `  ${children} no-op fan-out children: ${Math.round(child.perRun)} B per child (bar <= ${BAR_BYTES} B: ${child.perRun <= BAR_BYTES ? 'met' : 'NOT MET'})`,
  );
  console.log(`    by key: ${child.breakdown}; besides, capped keys grew by ${Math.round(child.capped)} B per child`);
  const single = await measure(async (engine) => {
    const handles = await Promise.all(Array.from({ length: runs }, () => engine.start(oneStep, {})));
    for (const handle of handles) await handle.result();
    return runs;
  }, redis);
  console.log(`  ${runs} one-step runs that emitted nothing: ${Math.round(single.perRun)} B per run`);
  console.log(`    by key: ${single.breakdown}; besides, capped keys grew by ${Math.round(single.capped)} B per run`);
} finally {
  redis.disconnect();
}
