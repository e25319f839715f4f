/**
 * Agent messaging (README "Agents talking", issue 26):
 * - **publish fan-out**: `engine.publish` to `keys` subscriber keys (their inboxes written and their
 *   turns started: each turn's run made and its first step's job added), against a BullMQ `addBulk`
 *   of as many jobs, each timed until it returns; printed as a ratio of throughputs (the bar is
 *   ≥ 0.8). Both end when Redis holds the work for workers to take, and neither has workers
 *   running meanwhile: workers in this process would take the publisher's event loop for turns
 *   that are not part of what is timed, and the `addBulk` has none.
 * - **reminder lateness**, on 2 workers in this process at concurrency 8: `keys` agents each set a
 *   reminder due at the same instant; the p50 and p99
 *   of how late each was delivered (the message's `sentAt` against its due time) and handled (its
 *   turn's start). The bar is p50 ≤ 100 ms on an idle machine.
 *
 * Usage: npm run bench -w @queueflow/worker -- agent-messaging   (or tsx
 *        bench/agent-messaging.bench.ts [--keys 1000 --rounds 3]; REDIS_URL selects Redis)
 */
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineAgent, Node, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { RedisEngine, startWorker, type QueueflowWorker } from '../src/index.js';
import { deleteKeys, formatRate, redisUrl } from './bench-support.js';
import { countRedisCommands, perUnit, type CommandCounts } from './redis-command-counter.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
  },
});
const keyCount = Number(values.keys);
const rounds = Number(values.rounds);
setWarningHandler(() => {});

interface Sleeper extends JsonObject {
  deliveredLateMs: number | null;
  handledLateMs: number | null;
}

/** Sets a reminder at `due` when told to; records how late the reminder came. */
class Sleep extends Node<Sleeper> {
  override prep(state: Sleeper): void {
    const message = this.message!;
    const { due } = message.body as { due: number };
    if (message.reminder === undefined) {
      this.remind('wake', { at: due, body: { due } });
      return;
    }
    state.deliveredLateMs = message.sentAt - due;
    state.handledLateMs = Date.now() - due;
  }
}
const listener = defineAgent('bench-listener', {
  state: () => ({}),
  turn: () => new Node({ name: 'noop' }),
  subscribe: { 'bench.all': () => keysOf() },
});
const sleeper = defineAgent<Sleeper>('bench-sleeper', {
  state: () => ({ deliveredLateMs: null, handledLateMs: null }),
  turn: () => new Sleep({ name: 'sleep' }),
});
const keys = Array.from({ length: keyCount }, (_, i) => `k${i}`);
function keysOf(): string[] {
  return keys;
}

/**
 * A client on a fresh prefix, with `workerCount` workers in this process (at concurrency 8);
 * `body` gets the client; all closed and deleted after.
 */
async function withDeployment<T>(workerCount: number, body: (engine: RedisEngine) => Promise<T>): Promise<T> {
  const prefix = `{bench-msg-${nanoid(6)}}`;
  const agents = [listener, sleeper];
  const options = { connection: redisUrl(), flows: [], agents, prefix, concurrency: 8 };
  const workers: QueueflowWorker[] = [];
  for (let i = 0; i < workerCount; i++) workers.push(await startWorker(options));
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], agents, prefix });
  try {
    return await body(engine);
  } finally {
    await engine.close();
    for (const worker of workers) await worker.close();
    await deleteKeys(prefix);
  }
}

const counter = countRedisCommands();
/** The Redis commands of the timed publishes, summed over the rounds. */
const publishCounts: CommandCounts = {};

/** Subscriber deliveries per second of one publish to every key. */
function publishRate(): Promise<number> {
  return withDeployment(0, async (engine) => {
    await engine.publish('bench.none', {}); // connects
    counter.reset();
    const started = performance.now();
    const { delivered } = await engine.publish('bench.all', { n: 1 });
    const seconds = (performance.now() - started) / 1000;
    for (const [name, n] of Object.entries(counter.counts)) publishCounts[name] = (publishCounts[name] ?? 0) + n;
    if (delivered.length !== keyCount) throw new Error(`delivered to ${delivered.length} of ${keyCount}`);
    return keyCount / seconds;
  });
}

/** Jobs per second of one BullMQ `addBulk` of `keyCount` jobs. */
async function addBulkRate(): Promise<number> {
  const prefix = `{bench-bulk-${nanoid(6)}}`;
  const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
  const queue = new Queue('bulk', { connection, prefix });
  try {
    await queue.waitUntilReady();
    const jobs = keys.map((key) => ({ name: 'deliver', data: { key, n: 1 } }));
    const started = performance.now();
    await queue.addBulk(jobs);
    return keyCount / ((performance.now() - started) / 1000);
  } finally {
    await queue.close();
    connection.disconnect();
    await deleteKeys(prefix);
  }
}

/** How late each of `keyCount` reminders due at one instant was delivered and handled, in ms. */
function reminderLateness(): Promise<{ delivered: number[]; handled: number[] }> {
  return withDeployment(2, async (engine) => {
    const due = Date.now() + 3000 + keyCount; // after every key has set its reminder
    await Promise.all(keys.map((key) => engine.send(sleeper.ref(key), { due })));
    const states: Sleeper[] = [];
    for (const key of keys) {
      for (;;) {
        const state = (await engine.agent(sleeper.ref(key)))?.state as Sleeper | undefined;
        if (state?.handledLateMs !== null && state?.handledLateMs !== undefined) {
          states.push(state);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    return {
      delivered: states.map((state) => state.deliveredLateMs!),
      handled: states.map((state) => state.handledLateMs!),
    };
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const ours: number[] = [];
const bulk: number[] = [];
for (let round = 0; round < rounds; round++) {
  bulk.push(await addBulkRate());
  ours.push(await publishRate());
}
const late = await reminderLateness();
const ratio = median(ours) / median(bulk);
console.log(`agent messaging: ${keyCount} keys, median of ${rounds} round(s)`);
console.log(`  publish to ${keyCount} keys (turns started) : ${formatRate(median(ours))} deliveries/s`);
console.log(`  BullMQ addBulk of ${keyCount} jobs           : ${formatRate(median(bulk))} jobs/s`);
console.log(`  ratio                                 : ${ratio.toFixed(2)} (publish / addBulk; the bar is ≥ 0.8)`);
const cost = perUnit(publishCounts, keyCount * rounds);
console.log(`  Redis commands per subscriber         : ${cost.total.toFixed(2)} (${cost.byKind})`);
console.log(
  `  reminders due at once, delivered late : p50 ${median(late.delivered)} ms, p99 ${percentile(late.delivered, 0.99)} ms (the bar is p50 ≤ 100 ms)`,
);
console.log(
  `  reminders due at once, handled late   : p50 ${median(late.handled)} ms, p99 ${percentile(late.handled, 0.99)} ms`,
);
recordFigure({ name: 'agents.publish-ratio', value: ratio, unit: '×', better: 'higher', bar: 0.8 });
recordFigure({
  name: 'agents.reminder-p50-late',
  value: median(late.delivered),
  unit: 'ms',
  better: 'lower',
  bar: 100,
});
