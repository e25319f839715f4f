/**
 * Fan-out at size (issue 17), on `queueflow worker` processes: a ParallelBatchNode of N no-op items
 * (default 1,000,000) on 2 workers, with Redis `used_memory` (peak over the run, minus before) and
 * each worker's RSS sampled every 500 ms; and a ParallelBatchFlow of 8,000 children that all write one
 * key, with the time of its fan-in step (its history record). Redis' SLOWLOG (every command over
 * 1 ms, reset first) names the slowest command during both.
 *
 * Usage: tsx bench/fan-out-at-size.bench.ts [--items 1000000 --same-key 8000 --workers 2 --concurrency 50]
 * (needs `npm run build`; REDIS_URL selects Redis, whose slowlog threshold it changes and restores)
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { setWarningHandler } from '@queueflow/runtime';
import { RedisEngine } from '../src/index.js';
import { deleteKeys, formatRate, redisUrl, startWorkerProcess, stopWorkerProcess } from './bench-support.js';
import { manyItems, sameKey } from './at-size-flows.js';

const FLOWS = fileURLToPath(new URL('./at-size-flows.ts', import.meta.url));
const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '1000000' },
    'same-key': { type: 'string', default: '8000' },
    workers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '50' },
  },
});
setWarningHandler(() => {});

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
};

const prefix = `{bench-at-size-${nanoid(6)}}`;
const redis = new Redis(redisUrl());
const slowlogThreshold = ((await redis.config('GET', 'slowlog-log-slower-than')) as string[])[1] ?? '10000';
await redis.config('SET', 'slowlog-log-slower-than', '1000');
await redis.slowlog('RESET');
const workers = await Promise.all(
  Array.from({ length: Number(values.workers) }, () => startWorkerProcess(prefix, FLOWS, Number(values.concurrency))),
);
const engine = new RedisEngine({
  connection: redisUrl(),
  flows: [manyItems, sameKey],
  prefix,
  commandTimeoutMs: 60_000,
});
try {
  const usedMemory = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
  const before = await usedMemory();
  let peak = before;
  const rss = workers.map((worker) => ({ min: Infinity, max: 0, pid: worker.pid! }));
  const sampler = setInterval(() => {
    void usedMemory().then((used) => (peak = Math.max(peak, used)));
    for (const sample of rss) {
      const now = rssOf(sample.pid);
      sample.min = Math.min(sample.min, now);
      sample.max = Math.max(sample.max, now);
    }
  }, 500);

  const n = Number(values.items);
  const started = performance.now();
  const items = await engine.run<{ n: number; done?: number }>(manyItems, { n });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  if (items.status !== 'completed' || items.shared.done !== n)
    throw new Error(`items: ${items.status} ${JSON.stringify(items.error)}`);
  console.log(
    `ParallelBatchNode of ${n.toLocaleString('en-US')} no-op items on ${workers.length} workers: ${seconds.toFixed(1)} s (${formatRate(n / seconds)} items/s)`,
  );
  console.log(`  Redis used_memory: ${mib(before)} before, peak ${mib(peak)} (+${mib(peak - before)})`);
  for (const [i, sample] of rss.entries())
    console.log(`  worker ${i + 1} RSS: ${mib(sample.min)} to ${mib(sample.max)}`);

  const children = Number(values['same-key']);
  const same = await engine.run(sameKey, { n: children });
  if (same.status !== 'completed') throw new Error(`same key: ${same.status} ${JSON.stringify(same.error)}`);
  const fanIn = (await engine.history(same.id)).find((record) => record.merged);
  console.log(
    `ParallelBatchFlow of ${children.toLocaleString('en-US')} children writing one key: fan-in step ${fanIn ? fanIn.endedAt - fanIn.startedAt : '?'} ms (${fanIn?.merged?.conflicts.length} conflict of ${fanIn?.merged?.conflicts[0]?.children.length} children)`,
  );

  const slowest = ((await redis.slowlog('GET', 128)) as [number, number, number, string[]][]).sort(
    (a, b) => b[2] - a[2],
  )[0];
  console.log(
    slowest
      ? `slowest Redis command during both: ${(slowest[2] / 1000).toFixed(1)} ms: ${slowest[3].slice(0, 3).join(' ').slice(0, 100)}`
      : 'no Redis command took over 1 ms',
  );
} finally {
  await engine.close();
  await Promise.all(workers.map(stopWorkerProcess));
  await redis.config('SET', 'slowlog-log-slower-than', slowlogThreshold);
  redis.disconnect();
  await deleteKeys(prefix);
}
