/**
 * Fan-out at size (issue 17), on `queueflow worker` processes: a ParallelBatchNode of N no-op items
 * (default 1,000,000) on 2 workers, with Redis `used_memory` (peak over the run, minus before) and
 * each worker's RSS sampled every second and printed over time (ten points through the run); and a
 * ParallelBatchFlow of 8,000 children that all write one key, with the time of its fan-in step (its
 * history record). Redis' SLOWLOG (every command over 1 ms, reset before each, room for 100,000
 * entries) names the slowest commands of each. The load average is printed beside: the figures are
 * only as quiet as the machine. Use a Redis of its own (REDIS_URL) for used_memory and SLOWLOG to be
 * this run's alone.
 *
 * Usage: tsx bench/fan-out-at-size.bench.ts [--items 1000000 --same-key 8000 --workers 2 --concurrency 50]
 * (needs `npm run build`; REDIS_URL selects Redis, whose slowlog threshold it changes and restores)
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, RedisKeys } from '../src/index.js';
import { deleteKeys, formatRate, redisUrl, startWorkerProcess, stopWorkerProcess } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';
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
const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
};

const prefix = `{bench-at-size-${nanoid(6)}}`;
const redis = new Redis(redisUrl());
const slowlogThreshold = ((await redis.config('GET', 'slowlog-log-slower-than')) as string[])[1] ?? '10000';
const slowlogMaxLen = ((await redis.config('GET', 'slowlog-max-len')) as string[])[1] ?? '128';
await redis.config('SET', 'slowlog-log-slower-than', '1000');
await redis.config('SET', 'slowlog-max-len', '100000');
await redis.slowlog('RESET');
await redis.config('RESETSTAT');

/**
 * A SLOWLOG entry's command, shortly. A script (EVAL, EVALSHA) is named by its first key, which
 * tells which transition it was (every script begins with the same prelude, so its text does not),
 * with the size of its largest argument (SLOWLOG keeps 128 characters of each and says how many
 * more there were).
 */
const describeCommand = (args: string[]): string => {
  const [name = '', ...rest] = args;
  if (!/^eval(sha)?$/i.test(name)) return args.slice(0, 3).join(' ').slice(0, 90);
  const [, numKeys = '0', ...keysAndArgs] = rest;
  const keys = keysAndArgs.slice(0, Number(numKeys));
  const sizes = keysAndArgs.slice(Number(numKeys)).map((arg) => {
    const more = /\.\.\. \((\d+) more bytes\)$/.exec(arg);
    return more ? 128 + Number(more[1]) : arg.length;
  });
  return `${name.toUpperCase()} ${numKeys} keys, first ${keys[0] ?? '-'}; largest argument ${Math.max(0, ...sizes)} bytes`;
};

/** The slowest commands SLOWLOG holds (over 1 ms), slowest first, as lines. */
const slowest = async (count: number): Promise<string[]> => {
  const entries = (await redis.slowlog('GET', -1)) as [number, number, number, string[]][];
  const total = entries.length;
  return entries
    .sort((a, b) => b[2] - a[2])
    .slice(0, count)
    .map(([, , micros, args]) => `${(micros / 1000).toFixed(1)} ms: ${describeCommand(args)}`)
    .concat(total === 0 ? ['no command took over 1 ms'] : [`(${total} commands over 1 ms in all)`]);
};
/**
 * Redis' own mean time per call of its busiest commands (INFO commandstats, reset with the
 * slowlog): beside SLOWLOG's slowest, it tells a slow command from a Redis the machine starved.
 */
const commandStats = async (count: number): Promise<string[]> => {
  const info = await redis.info('commandstats');
  return [...info.matchAll(/^cmdstat_(\w+):calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/gm)]
    .map(([, name, calls, usec, perCall]) => ({
      name: name!,
      calls: Number(calls),
      usec: Number(usec),
      perCall: Number(perCall),
    }))
    .sort((a, b) => b.usec - a.usec)
    .slice(0, count)
    .map(
      (s) => `${s.name}: ${s.calls} calls, ${(s.usec / 1e6).toFixed(1)} s in all, ${s.perCall.toFixed(0)} µs per call`,
    );
};
const load = (): string =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
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
  const samples: { at: number; used: number; rss: number[]; ended: number }[] = [];
  const n = Number(values.items);
  const loadBefore = load();
  const started = performance.now();
  const handle = await engine.start<{ n: number; done?: number }>(manyItems, { n });
  let ended = 0;
  const sampler = setInterval(() => {
    const at = (performance.now() - started) / 1000;
    const rss = workers.map((worker) => rssOf(worker.pid!));
    void usedMemory().then((used) => {
      peak = Math.max(peak, used);
      samples.push({ at, used, rss, ended });
    });
  }, 1000);
  const progress = setInterval(() => {
    // The fan-out's counter alone: `engine.get` would read the parent's whole record, whose
    // checkpoint holds the prep result (a million items), and show up in SLOWLOG itself.
    void redis.hget(new RedisKeys(prefix).fanOut(handle.id), 'ended').then((count) => {
      ended = Number(count ?? ended);
      const last = samples.at(-1);
      console.error(
        `  … ${Math.round((performance.now() - started) / 1000)} s: ${ended} items ended; used_memory ${mib(last?.used ?? 0)} (peak ${mib(peak)}); RSS ${last?.rss.map(mib).join(', ')}; load ${load()}`,
      );
    });
  }, 30_000);
  const items = await handle.result();
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  clearInterval(progress);
  if (items.status !== 'completed' || items.shared.done !== n)
    throw new Error(`items: ${items.status} ${JSON.stringify(items.error)}`);
  console.log(
    `ParallelBatchNode of ${n.toLocaleString('en-US')} no-op items on ${workers.length} workers: ${seconds.toFixed(1)} s (${formatRate(n / seconds)} items/s); load average ${loadBefore} before, ${load()} after`,
  );
  recordFigure({ name: 'fan-out-at-size.items', value: n / seconds, unit: 'items/s', better: 'higher' });
  const infoPeak = Number(/used_memory_peak:(\d+)/.exec(await redis.info('memory'))?.[1]);
  console.log(
    `  Redis used_memory: ${mib(before)} before, peak ${mib(peak)} (+${mib(peak - before)}) sampled each second; INFO used_memory_peak ${mib(infoPeak)}`,
  );
  recordFigure({ name: 'fan-out-at-size.redis-memory', value: peak - before, unit: 'B', better: 'lower' });
  console.log('  over time (s: used_memory | RSS of each worker):');
  for (let k = 1; k <= 10; k++) {
    const sample = samples[Math.min(samples.length - 1, Math.floor((k * samples.length) / 10) - 1)];
    if (sample)
      console.log(`    ${sample.at.toFixed(0).padStart(5)} s: ${mib(sample.used)} | ${sample.rss.map(mib).join(', ')}`);
  }
  for (const [i] of workers.entries()) {
    const rss = samples.map((sample) => sample.rss[i]!);
    const half = Math.floor(rss.length / 2);
    console.log(
      `  worker ${i + 1} RSS: ${mib(Math.min(...rss))} to ${mib(Math.max(...rss))}; mean of the first half ${mib(mean(rss.slice(0, half)))}, of the second ${mib(mean(rss.slice(half)))}`,
    );
  }
  console.log('  slowest Redis commands during the items:');
  for (const line of await slowest(3)) console.log(`    ${line}`);
  console.log('  where Redis spent its time during the items (INFO commandstats):');
  for (const line of await commandStats(4)) console.log(`    ${line}`);
  await redis.slowlog('RESET');
  await redis.config('RESETSTAT');

  const children = Number(values['same-key']);
  const same = await engine.run(sameKey, { n: children });
  if (same.status !== 'completed') throw new Error(`same key: ${same.status} ${JSON.stringify(same.error)}`);
  const fanIn = (await engine.history(same.id)).find((record) => record.merged);
  console.log(
    `ParallelBatchFlow of ${children.toLocaleString('en-US')} children writing one key: fan-in step ${fanIn ? fanIn.endedAt - fanIn.startedAt : '?'} ms (${fanIn?.merged?.conflicts.length} conflict of ${fanIn?.merged?.conflicts[0]?.children.length} children)`,
  );

  console.log('  slowest Redis commands during the same-key fan-out:');
  for (const line of await slowest(3)) console.log(`    ${line}`);
  console.log('  where Redis spent its time during the same-key fan-out (INFO commandstats):');
  for (const line of await commandStats(4)) console.log(`    ${line}`);
} finally {
  await engine.close();
  await Promise.all(workers.map(stopWorkerProcess));
  await redis.config('SET', 'slowlog-log-slower-than', slowlogThreshold);
  await redis.config('SET', 'slowlog-max-len', slowlogMaxLen);
  redis.disconnect();
  await deleteKeys(prefix);
}
