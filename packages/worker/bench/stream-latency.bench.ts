/**
 * Stream latency: from `this.emit` in a step on a worker to the entry arriving at a client that
 * follows the run (`engine.stream`), against a raw XADD → XREAD BLOCK pair on the same Redis
 * (one connection adds, another blocks reading). Entries are emitted one every `gap` ms, as a
 * model's tokens come; worker, client and raw pair all run in this one process (one clock).
 * Prints p50 and p99 of each and their ratios.
 *
 * Usage: npm run bench -w @queueflow/worker -- stream   (REDIS_URL selects Redis)
 *        tsx bench/stream-latency.bench.ts [--entries 400] [--gap 5]
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, Node, setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deleteKeys, redisUrl } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: { entries: { type: 'string', default: '400' }, gap: { type: 'string', default: '5' } },
});
const entries = Number(values.entries);
const gapMs = Number(values.gap);
setWarningHandler(() => {});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

class Talk extends Node<{ entries: number; gapMs: number }> {
  override prep(shared: { entries: number; gapMs: number }): { entries: number; gapMs: number } {
    return shared;
  }
  override async exec({ entries: count, gapMs: gap }: { entries: number; gapMs: number }): Promise<void> {
    for (let i = 0; i < count; i++) {
      this.emit({ i, t: performance.now() });
      await sleep(gap);
    }
  }
}
const talk = defineFlow('bench-talk', () => new Flow(new Talk({ name: 'talk' })));

async function queueflowLatencies(): Promise<number[]> {
  const prefix = `{bench-stream-${nanoid(6)}}`;
  const worker = await startWorker({ connection: redisUrl(), flows: [talk], prefix, concurrency: 1 });
  const engine = new RedisEngine({ connection: redisUrl(), flows: [talk], prefix });
  try {
    const handle = await engine.start(talk, { entries, gapMs });
    const latencies: number[] = [];
    for await (const entry of engine.stream(handle.id)) {
      latencies.push(performance.now() - (entry.data as { t: number }).t);
    }
    if (latencies.length !== entries) throw new Error(`got ${latencies.length} of ${entries} entries`);
    return latencies;
  } finally {
    await engine.close();
    await worker.close();
    await deleteKeys(prefix);
  }
}

async function rawLatencies(): Promise<number[]> {
  const key = `{bench-raw-${nanoid(6)}}:stream`;
  const writer = new Redis(redisUrl());
  const reader = new Redis(redisUrl());
  const latencies: number[] = [];
  try {
    const reading = (async () => {
      let last = '0-0';
      while (latencies.length < entries) {
        const reply = (await reader.call('XREAD', 'COUNT', 100, 'BLOCK', 5000, 'STREAMS', key, last)) as
          [string, [string, string[]][]][] | null;
        for (const [, list] of reply ?? []) {
          for (const [id, fields] of list) {
            latencies.push(performance.now() - Number(fields[1]));
            last = id;
          }
        }
      }
    })();
    await sleep(50); // the reader is blocked
    for (let i = 0; i < entries; i++) {
      await writer.xadd(key, 'MAXLEN', '~', 10_000, '*', 't', String(performance.now()));
      await sleep(gapMs);
    }
    await reading;
    return latencies;
  } finally {
    await writer.del(key);
    writer.disconnect();
    reader.disconnect();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

await rawLatencies(); // warm-up
await queueflowLatencies();
// The first entries of a run may be replayed rather than followed (the client attaches as the
// step begins): only the entries after the first 20 count.
const raw = (await rawLatencies()).slice(20);
const ours = (await queueflowLatencies()).slice(20);
const ms = (value: number): string => `${value.toFixed(2)} ms`;
console.log(`stream latency, ${entries} entries ${gapMs} ms apart, emit → following client`);
console.log(`  queueflow this.emit → engine.stream : p50 ${ms(percentile(ours, 50))}, p99 ${ms(percentile(ours, 99))}`);
console.log(`  raw XADD → XREAD BLOCK              : p50 ${ms(percentile(raw, 50))}, p99 ${ms(percentile(raw, 99))}`);
recordFigure({
  name: 'stream-latency.p50.ratio',
  value: percentile(ours, 50) / percentile(raw, 50),
  unit: '×',
  better: 'lower',
});
recordFigure({
  name: 'stream-latency.p99.ratio',
  value: percentile(ours, 99) / percentile(raw, 99),
  unit: '×',
  better: 'lower',
});
recordFigure({ name: 'stream-latency.p50', value: percentile(ours, 50), unit: 'ms', better: 'lower' });
console.log(
  `  ratio                               : p50 ${(percentile(ours, 50) / percentile(raw, 50)).toFixed(2)}×, p99 ${(percentile(ours, 99) / percentile(raw, 99)).toFixed(2)}× (queueflow / raw)`,
);
