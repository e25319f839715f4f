/**
 * The claim check (issue 17, item 4: large values in `shared` stored once, apart): what it costs
 * where it does nothing, and what it saves where it does, side by side in one process.
 *
 * 1. Hot path: steps per CPU-second (LocalEngine: all its work is in this process) and steps per
 *    second (RedisEngine, one in-process worker, concurrency 1) of a sequential flow over a small
 *    `shared` (about 300 bytes), with the claim check
 *    on (`largeValueBytes` default, 256 KiB) and off (`Infinity`: the encodings before it), in
 *    alternating rounds; printed as the ratio on / off (1.00: no cost).
 * 2. Memory: a ParallelBatchFlow of 20 children over a 10 MiB `shared`, measured while every
 *    child is in `exec` and after the run: what the keys under the run's prefix take in Redis
 *    (MEMORY USAGE), on and off.
 *
 * Usage: npm run bench -w @queueflow/worker -- claim-check
 *        (or tsx bench/claim-check.bench.ts [--steps 1000 --local-steps 20000 --rounds 6];
 *        REDIS_URL selects Redis)
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, LocalEngine, Node, ParallelBatchFlow, setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deleteKeys, formatRate, redisUrl } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '1000' },
    'local-steps': { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '6' },
  },
});
const redisSteps = Number(values.steps);
const localSteps = Number(values['local-steps']);
const rounds = Number(values.rounds);
setWarningHandler(() => {});

type Counter = { count: number; limit: number; notes: string[]; meta: Record<string, string> };
class Tick extends Node<Counter> {
  override post(shared: Counter): string | undefined {
    shared.count += 1;
    return shared.count < shared.limit ? 'again' : undefined;
  }
}
const chain = defineFlow('bench-claim-chain', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});
const smallShared = (steps: number): Counter => ({
  count: 0,
  limit: steps,
  notes: Array.from({ length: 8 }, (_, i) => `note ${i}: a few words of state`),
  meta: { owner: 'bench', kind: 'small shared store', created: '2026-12-01' },
});

/** Every child waits in exec until the bench has measured the fan-out in flight. */
let inExec = 0;
let release: () => void = () => {};
let released = new Promise<void>((resolve) => (release = resolve));
const CHILDREN = 20;
class Children extends ParallelBatchFlow<Record<string, unknown>> {
  override prep(): object[] {
    return Array.from({ length: CHILDREN }, (_, i) => ({ i }));
  }
}
class Child extends Node<Record<string, unknown>> {
  override async exec(): Promise<void> {
    inExec++;
    await released;
  }
  override post(shared: Record<string, unknown>): void {
    shared[`r${this.params.i as number}`] = 1;
  }
}
const fan = defineFlow(
  'bench-claim-fan',
  () => new Flow(new Children(new Child({ name: 'child' }), { name: 'children' })),
);

type Mode = 'on' | 'off';
/** On: the default `largeValueBytes`; off: `Infinity`, nothing set apart. */
const option = (mode: Mode): { largeValueBytes?: number } => (mode === 'on' ? {} : { largeValueBytes: Infinity });

async function localRound(mode: Mode): Promise<number> {
  const engine = new LocalEngine({ flows: [chain], concurrency: 1, ...option(mode) });
  try {
    // CPU time of this process (all the engine's work is here): steadier than wall time on a
    // machine shared with other work.
    const started = process.cpuUsage();
    const result = await engine.run(chain, smallShared(localSteps));
    const used = process.cpuUsage(started);
    if (result.status !== 'completed' || result.shared.count !== localSteps) throw new Error('local run failed');
    return localSteps / ((used.user + used.system) / 1e6);
  } finally {
    await engine.close();
  }
}

async function redisRound(mode: Mode): Promise<number> {
  const prefix = `{bench-claim-${nanoid(6)}}`;
  const worker = await startWorker({ connection: redisUrl(), flows: [chain], prefix, concurrency: 1, ...option(mode) });
  const engine = new RedisEngine({ connection: redisUrl(), flows: [chain], prefix, ...option(mode) });
  try {
    const started = performance.now();
    const result = await engine.run(chain, smallShared(redisSteps));
    if (result.status !== 'completed' || result.shared.count !== redisSteps) throw new Error('redis run failed');
    return redisSteps / ((performance.now() - started) / 1000);
  } finally {
    await engine.close();
    await worker.close();
    await deleteKeys(prefix);
  }
}

async function prefixBytes(redis: Redis, prefix: string): Promise<number> {
  let sum = 0;
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>)
    for (const key of keys) sum += Number((await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
  return sum;
}

async function memoryRound(mode: Mode, redis: Redis): Promise<{ during: number; after: number }> {
  const prefix = `{bench-claim-mem-${nanoid(6)}}`;
  const worker = await startWorker({
    connection: redisUrl(),
    flows: [fan],
    prefix,
    concurrency: CHILDREN,
    ...option(mode),
  });
  const engine = new RedisEngine({ connection: redisUrl(), flows: [fan], prefix, ...option(mode) });
  inExec = 0;
  released = new Promise<void>((resolve) => (release = resolve));
  try {
    const handle = await engine.start(fan, { blob: 'x'.repeat(10 * 1024 * 1024) });
    while (inExec < CHILDREN) await new Promise((resolve) => setTimeout(resolve, 20));
    const during = await prefixBytes(redis, prefix);
    release();
    const result = await handle.result();
    if (result.status !== 'completed') throw new Error(`fan-out failed: ${JSON.stringify(result.error)}`);
    return { during, after: await prefixBytes(redis, prefix) };
  } finally {
    await engine.close();
    await worker.close();
    await deleteKeys(prefix);
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

console.log(`claim check, hot path: a sequential flow over a ~300-byte shared, ${rounds} rounds each, alternating`);
for (const [engine, round, steps, unit] of [
  ['LocalEngine', localRound, localSteps, 'steps per CPU-s'],
  ['RedisEngine', redisRound, redisSteps, 'steps/s'],
] as const) {
  await round('on'); // warm-up
  await round('off');
  const rates: Record<Mode, number[]> = { on: [], off: [] };
  for (let i = 0; i < rounds; i++) {
    for (const mode of i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const))
      rates[mode].push(await round(mode));
  }
  const on = median(rates.on);
  const off = median(rates.off);
  console.log(
    `  ${engine} (${steps} steps): on ${formatRate(on)} ${unit}, off ${formatRate(off)} ${unit}, ratio on/off ${(on / off).toFixed(2)} (medians)`,
  );
  const id = engine === 'LocalEngine' ? 'local' : 'redis';
  recordFigure({ name: `claim-check.${id}.on-off`, value: on / off, unit: '×', better: 'higher' });
}

const redis = new Redis(redisUrl());
try {
  console.log(`claim check, memory: ${CHILDREN} fan-out children over a 10 MiB shared (keys under the run's prefix)`);
  for (const mode of ['off', 'on'] as const) {
    const { during, after } = await memoryRound(mode, redis);
    console.log(
      `  ${mode === 'on' ? 'on ' : 'off'}: ${mib(during)} while the children run, ${mib(after)} after the run`,
    );
    recordFigure({ name: `claim-check.memory.${mode}`, value: during, unit: 'B', better: 'lower' });
  }
} finally {
  redis.disconnect();
}
