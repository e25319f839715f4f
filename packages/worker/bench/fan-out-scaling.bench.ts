/**
 * Fan-out scaling (issue 4, benchmark b): wall time of a ParallelBatchFlow of N I/O-bound
 * children (each awaits a 50 ms timer, as a model or web call would) on 1, 2 and 4 `queueflow
 * worker` processes at the same per-worker concurrency, and the speed-ups over 1 worker. The
 * issue's bar: ≥ 1.8× with 2 workers, ≥ 3.4× with 4.
 *
 * Per-worker concurrency (default 5): the work must stay I/O-bound at every worker count on the
 * machine the figures come from (2 cores, shared by the workers, Redis and this driver). A child
 * costs about 0.5 ms of CPU in all (worker and Redis; fan-out.bench.ts does ~2,000 no-op children
 * per second), so 2,000 children need about 1 s of CPU wherever they run. At 5 slots per worker
 * the 4-worker run waits 2,000 × 50 ms / 20 ≈ 5 s on timers, and the cores are idle most of that
 * time: a second worker adds slots, not a queue for a core. Measured on this machine (3 rounds):
 * 4 workers gave 3.84× at 5 slots each, 3.59× at 8 and 3.57× at 10, where the 4-worker run
 * (≈ 3 s) spends a third of its time on CPU and each child waits longer for a core; at 16 slots
 * it would measure the CPU, not the engine.
 *
 * Each trial starts its workers (warm: ready, and a small fan-out run first), on a key prefix of
 * its own, deleted afterwards; trials go round-robin over the worker counts so that a busy
 * machine slows them alike.
 *
 * Usage: tsx bench/fan-out-scaling.bench.ts [--children 2000 --io-ms 50 --concurrency 5 --workers 1,2,4 --rounds 3]
 * (needs `npm run build`: workers run the built CLI; REDIS_URL selects Redis)
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { nanoid } from 'nanoid';
import { setWarningHandler } from '@queueflow/runtime';
import { RedisEngine } from '../src/index.js';
import { deleteKeys, redisUrl, startWorkerProcess, stopWorkerProcess } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';
import { ioFanOut } from './scaling-flows.js';

const FLOWS = fileURLToPath(new URL('./scaling-flows.ts', import.meta.url));

const { values } = parseArgs({
  options: {
    children: { type: 'string', default: '2000' },
    'io-ms': { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '5' },
    workers: { type: 'string', default: '1,2,4' },
    rounds: { type: 'string', default: '3' },
  },
});
const children = Number(values.children);
const ioMs = Number(values['io-ms']);
const concurrency = Number(values.concurrency);
const counts = values.workers.split(',').map(Number);
const rounds = Number(values.rounds);
setWarningHandler(() => {});

/** Wall time in seconds of one fan-out of `children` on `workers` fresh worker processes. */
async function trial(workers: number): Promise<number> {
  const prefix = `{bench-scaling-${nanoid(6)}}`;
  const processes: ChildProcess[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [ioFanOut], prefix });
  try {
    processes.push(
      ...(await Promise.all(Array.from({ length: workers }, () => startWorkerProcess(prefix, FLOWS, concurrency)))),
    );
    // Warm-up: every worker loads the graph and scripts and takes a few children.
    await engine.run(ioFanOut, { n: workers * concurrency * 2 }, { params: { ioMs: 1 } });
    const started = performance.now();
    const result = await engine.run<Record<string, any>>(ioFanOut, { n: children }, { params: { ioMs } });
    const seconds = (performance.now() - started) / 1000;
    const done = Object.keys((result.shared.done as object | undefined) ?? {}).length;
    if (result.status !== 'completed' || done !== children) {
      throw new Error(
        `fan-out on ${workers} workers: ${result.status}, ${done} children done: ${JSON.stringify(result.error)}`,
      );
    }
    return seconds;
  } finally {
    await engine.close();
    await Promise.all(processes.map(stopWorkerProcess));
    await deleteKeys(prefix);
  }
}

const times = new Map<number, number[]>(counts.map((n) => [n, []]));
for (let round = 1; round <= rounds; round++) {
  for (const workers of counts) {
    const seconds = await trial(workers);
    times.get(workers)!.push(seconds);
    console.log(`round ${round}/${rounds}  ${workers} worker${workers === 1 ? ' ' : 's'}  ${seconds.toFixed(2)} s`);
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const base = counts[0]!;
const ideal = (children * ioMs) / 1000 / concurrency;
console.log(
  `\nI/O-bound fan-out: ${children} children × ${ioMs} ms timer, worker processes at concurrency ${concurrency} each, ${rounds} rounds` +
    `\n(ideal on 1 worker: ${ideal.toFixed(2)} s; speed-up = time on ${base} worker / time on n, per round)`,
);
for (const workers of counts) {
  const own = times.get(workers)!;
  const speedUps = own.map((t, i) => times.get(base)![i]! / t);
  const bar = workers === 2 ? '  (bar ≥ 1.8)' : workers === 4 ? '  (bar ≥ 3.4)' : '';
  if (workers !== base) {
    const figureBar = workers === 2 ? { bar: 1.8 } : workers === 4 ? { bar: 3.4 } : {};
    const name = `fan-out-scaling.speed-up.${workers}-workers`;
    recordFigure({ name, value: median(speedUps), unit: '×', better: 'higher', ...figureBar });
  }
  console.log(
    `  ${String(workers).padStart(2)} worker${workers === 1 ? ' ' : 's'}: median ${median(own).toFixed(2)} s ` +
      `[${Math.min(...own).toFixed(2)}–${Math.max(...own).toFixed(2)}]` +
      (workers === base
        ? ''
        : `   speed-up median ${median(speedUps).toFixed(2)}× [${Math.min(...speedUps).toFixed(2)}–${Math.max(...speedUps).toFixed(2)}]${bar}`),
  );
}
