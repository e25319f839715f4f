/**
 * Keyed agents (README "Agents"), two figures in one run:
 * - turns per second of one key handling `messages` messages sent up front (waiting in its inbox
 *   when the worker starts), on one worker at concurrency 1, against raw BullMQ jobs chained one
 *   after the other (the bar is ≥ 0.8);
 * - Redis bytes per idle agent beyond its state's JSON: `keys` keys take one turn each, then the
 *   MEMORY USAGE of their hashes and of the partition's agent index is summed (the bar is ≤ 300 B).
 *
 * Usage: npm run bench -w @queueflow/worker -- agent-turns   (or tsx bench/agent-turns.bench.ts
 *        [--messages 1000 --keys 100000 --rounds 3]; REDIS_URL selects Redis)
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineAgent, Node, setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, startWorker, type QueueflowWorker } from '../src/index.js';
import { RedisKeys } from '../src/redis-keys.js';
import { chainedBullmqRate, deleteKeys, formatRate, redisUrl } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '1000' },
    keys: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '3' },
  },
});
const messages = Number(values.messages);
const keyCount = Number(values.keys);
const rounds = Number(values.rounds);
setWarningHandler(() => {});

class Add extends Node<{ n: number }> {
  override prep(state: { n: number }): void {
    state.n += 1;
  }
}
const counter = defineAgent('bench-counter', { state: () => ({ n: 0 }), turn: () => new Add({ name: 'add' }) });

/**
 * Opens a client on a fresh prefix and, when `body` asks, a worker at concurrency 1; everything
 * is closed and deleted after.
 */
async function withDeployment<T>(
  body: (engine: RedisEngine, prefix: string, startWorkerNow: () => Promise<void>) => Promise<T>,
): Promise<T> {
  const prefix = `{bench-agents-${nanoid(6)}}`;
  const workers: QueueflowWorker[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], agents: [counter], prefix });
  const startWorkerNow = async (): Promise<void> => {
    workers.push(await startWorker({ connection: redisUrl(), flows: [], agents: [counter], prefix, concurrency: 1 }));
  };
  try {
    return await body(engine, prefix, startWorkerNow);
  } finally {
    await engine.close();
    for (const worker of workers) await worker.close();
    await deleteKeys(prefix);
  }
}

/**
 * Turns per second of one key handling `messages` messages that wait in its inbox: they are sent
 * before any worker runs (the time to send them is not a turn's), then timed from the worker's
 * start (its setup done, as the raw chain's worker is ready before its clock starts) to the last
 * turn's commit, both on the Redis server's clock (the commit's time is the key's `lastTurnAt`).
 * The end is looked for every 100 ms, not sooner: the look runs in the worker's process, and
 * looking every few ms took a tenth of its CPU from the turns (the raw chain is not looked at).
 */
function oneKeyRate(): Promise<number> {
  return withDeployment(async (engine, _prefix, startWorkerNow) => {
    const ref = counter.ref('hot');
    for (let i = 0; i < messages; i++) await engine.send(ref, {});
    const redis = new Redis(redisUrl());
    try {
      await startWorkerNow();
      // From the worker's start being done (the raw chain's worker is ready before its clock starts).
      const [seconds, micros] = await redis.time();
      const startedAt = Number(seconds) * 1000 + Number(micros) / 1000;
      const before = (await engine.agent(ref))?.turns ?? 0;
      for (;;) {
        const agent = await engine.agent(ref);
        if (agent?.turns === messages) return (messages - before) / ((agent.lastTurnAt! - startedAt) / 1000);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      redis.disconnect();
    }
  });
}

/** Redis bytes per idle agent beyond its state's JSON, over `keyCount` keys that took one turn each. */
function idleBytes(): Promise<number> {
  return withDeployment(async (engine, prefix, startWorkerNow) => {
    await startWorkerNow();
    const refs = Array.from({ length: keyCount }, (_, i) => counter.ref(`k${i}`));
    for (let first = 0; first < refs.length; first += 500)
      await Promise.all(refs.slice(first, first + 500).map((ref) => engine.send(ref, {})));
    const keys = new RedisKeys(prefix);
    const redis = new Redis(redisUrl());
    try {
      while ((await redis.zcard(keys.agentsRunning())) > 0 || (await engine.agent(refs.at(-1)!))?.turns !== 1)
        await new Promise((resolve) => setTimeout(resolve, 20));
      let bytes = Number(await redis.call('MEMORY', 'USAGE', keys.agents(), 'SAMPLES', '0'));
      let stateBytes = 0;
      for (let first = 0; first < refs.length; first += 1000) {
        const pipeline = redis.pipeline();
        for (const ref of refs.slice(first, first + 1000))
          pipeline.call('MEMORY', 'USAGE', keys.agent(ref), 'SAMPLES', '0').hget(keys.agent(ref), 'st');
        const replies = (await pipeline.exec())!.map(([error, value]) => {
          if (error) throw error;
          return value;
        });
        for (let i = 0; i < replies.length; i += 2) {
          bytes += Number(replies[i]);
          stateBytes += (replies[i + 1] as string).length;
        }
      }
      return (bytes - stateBytes) / keyCount;
    } finally {
      redis.disconnect();
    }
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
await chainedBullmqRate(200); // warm-up: module loading, script loading
await oneKeyRate();
const ours: number[] = [];
const raw: number[] = [];
for (let round = 0; round < rounds; round++) {
  raw.push(await chainedBullmqRate(messages));
  ours.push(await oneKeyRate());
}
const perAgent = await idleBytes();
console.log(`keyed agents: ${messages} messages to one key, 1 worker at concurrency 1, median of ${rounds} rounds`);
console.log(`  turns on one key                 : ${formatRate(median(ours))} turns/s`);
console.log(`  raw BullMQ chained               : ${formatRate(median(raw))} jobs/s`);
console.log(
  `  ratio                            : ${(median(ours) / median(raw)).toFixed(2)} (turns / BullMQ jobs; the bar is ≥ 0.8)`,
);
console.log(
  `  Redis per idle agent             : ${Math.round(perAgent)} B beyond its state's JSON (${keyCount} keys; the bar is ≤ 300 B)`,
);
recordFigure({ name: 'agents.turns-ratio', value: median(ours) / median(raw), unit: '×', better: 'higher', bar: 0.8 });
recordFigure({ name: 'agents.turns', value: median(ours), unit: 'turns/s', better: 'higher' });
recordFigure({ name: 'agents.idle-bytes', value: perAgent, unit: 'B', better: 'lower', bar: 300 });
