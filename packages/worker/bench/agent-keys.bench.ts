/**
 * Many keyed agents at once (README "Agents"): `keys` keys × `messages` messages each, sent up
 * front, handled on 2 workers (in this process) at concurrency 8, against the same number of
 * one-step runs started up front on the same 2 workers. Printed as a ratio of throughputs (the
 * bar of issue 25 is ≥ 1.0 for 10,000 keys × 5 messages).
 *
 * Usage: npm run bench -w @queueflow/worker -- agent-keys   (or tsx bench/agent-keys.bench.ts
 *        [--keys 10000 --messages 5 --rounds 1]; REDIS_URL selects Redis)
 */
import { parseArgs } from 'node:util';
import { nanoid } from 'nanoid';
import { defineAgent, defineFlow, Flow, Node, setWarningHandler } from '@queueflow/runtime';
import { RedisEngine, startWorker, type QueueflowWorker } from '../src/index.js';
import { deleteKeys, formatRate, redisUrl } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '10000' },
    messages: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '1' },
  },
});
const keyCount = Number(values.keys);
const perKey = Number(values.messages);
const rounds = Number(values.rounds);
const total = keyCount * perKey;
setWarningHandler(() => {});

class Add extends Node<{ n: number }> {
  override prep(state: { n: number }): void {
    state.n += 1;
  }
}
const counter = defineAgent('bench-keys', { state: () => ({ n: 0 }), turn: () => new Add({ name: 'add' }) });
const oneStep = defineFlow('bench-one-step', () => new Flow(new Add({ name: 'add' })));

/** Two workers and a client on a fresh prefix; `body` gets the client; all closed and deleted after. */
async function withDeployment<T>(body: (engine: RedisEngine) => Promise<T>): Promise<T> {
  const prefix = `{bench-keys-${nanoid(6)}}`;
  const options = { connection: redisUrl(), flows: [oneStep], agents: [counter], prefix, concurrency: 8 };
  const workers: QueueflowWorker[] = [await startWorker(options), await startWorker(options)];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [oneStep], agents: [counter], prefix });
  try {
    return await body(engine);
  } finally {
    await engine.close();
    for (const worker of workers) await worker.close();
    await deleteKeys(prefix);
  }
}

/** Turns per second of `keyCount` keys handling `perKey` messages each. */
function agentsRate(): Promise<number> {
  return withDeployment(async (engine) => {
    const refs = Array.from({ length: keyCount }, (_, i) => counter.ref(`k${i}`));
    const started = performance.now();
    for (let m = 0; m < perKey; m++) await Promise.all(refs.map((ref) => engine.send(ref, {})));
    for (const ref of refs)
      while ((await engine.agent(ref))?.turns !== perKey) await new Promise((resolve) => setTimeout(resolve, 20));
    return total / ((performance.now() - started) / 1000);
  });
}

/** Runs per second of `total` one-step runs. */
function runsRate(): Promise<number> {
  return withDeployment(async (engine) => {
    const started = performance.now();
    const handles = await Promise.all(Array.from({ length: total }, () => engine.start(oneStep, { n: 0 })));
    for (const handle of handles) {
      const result = await handle.result();
      if (result.status !== 'completed') throw new Error(`run ${handle.id} ${result.status}`);
    }
    return total / ((performance.now() - started) / 1000);
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ours: number[] = [];
const runs: number[] = [];
for (let round = 0; round < rounds; round++) {
  runs.push(await runsRate());
  ours.push(await agentsRate());
}
console.log(
  `keyed agents: ${keyCount} keys × ${perKey} messages, 2 workers at concurrency 8, median of ${rounds} round(s)`,
);
console.log(`  turns                            : ${formatRate(median(ours))} turns/s`);
console.log(`  one-step runs                    : ${formatRate(median(runs))} runs/s`);
console.log(
  `  ratio                            : ${(median(ours) / median(runs)).toFixed(2)} (turns / runs; the bar is ≥ 1.0)`,
);
recordFigure({ name: 'agents.keys-ratio', value: median(ours) / median(runs), unit: '×', better: 'higher', bar: 1 });
recordFigure({ name: 'agents.keys-turns', value: median(ours), unit: 'turns/s', better: 'higher' });
