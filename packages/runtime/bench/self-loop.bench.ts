/**
 * Steps per second of a node that loops to itself N times (post returns an action mapped back
 * to the same node), queueflow vs the published `pocketflow` npm package (the PocketFlow
 * TypeScript port), side by side in one process.
 *
 * Usage: npm run bench -w @queueflow/runtime [-- --steps 100000 --iterations 10]
 */
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import * as pocketflow from 'pocketflow';
import * as queueflow from '../dist/index.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '100000' },
    iterations: { type: 'string', default: '10' },
  },
});
const steps = Number(values.steps);
const iterations = Number(values.iterations);

interface Counter {
  count: number;
}

type Lib = typeof pocketflow | typeof queueflow;

function selfLoopFlow(lib: Lib): { run(shared: Counter): Promise<unknown> } {
  // Both libraries expose the same API; one static type for both keeps the flow code identical.
  const { Node, Flow } = lib as typeof queueflow;
  class Tick extends Node<Counter> {
    override async prep(shared: Counter): Promise<number> {
      return shared.count;
    }
    override async exec(count: number): Promise<number> {
      return count + 1;
    }
    override async post(shared: Counter, _prep: unknown, next: number): Promise<string | undefined> {
      shared.count = next;
      return next < steps ? 'again' : 'done';
    }
  }
  const tick = new Tick();
  tick.on('again', tick);
  return new Flow(tick);
}

// Each run ends with one 'Flow ends' warning from both libraries: silence both channels alike.
queueflow.setWarningHandler(() => {});
console.warn = () => {};

const flows = { queueflow: selfLoopFlow(queueflow), pocketflow: selfLoopFlow(pocketflow) };
for (const [name, flow] of Object.entries(flows)) {
  const shared = { count: 0 };
  await flow.run(shared);
  if (shared.count !== steps) throw new Error(`${name} ran ${shared.count} steps, expected ${steps}`);
}

const bench = new Bench({ iterations, warmupIterations: 2, time: 0 });
bench.add('queueflow', () => flows.queueflow.run({ count: 0 }));
bench.add('pocketflow', () => flows.pocketflow.run({ count: 0 }));
await bench.run();

const stepsPerSecond = (name: string): number => {
  const task = bench.getTask(name);
  const result = task?.result;
  if (!result || !('latency' in result)) throw new Error(`no result for ${name}`);
  return steps / (result.latency.mean / 1000);
};
const ours = stepsPerSecond('queueflow');
const theirs = stepsPerSecond('pocketflow');
const format = (n: number): string => Math.round(n).toLocaleString('en-US');
console.log(`self-loop flow, ${steps.toLocaleString('en-US')} steps, ${iterations} iterations`);
console.log(`  queueflow : ${format(ours)} steps/s`);
console.log(`  pocketflow: ${format(theirs)} steps/s (pocketflow@1.0.4, the TypeScript port)`);
console.log(`  ratio     : ${(ours / theirs).toFixed(2)} (queueflow / pocketflow; the bar is ≥ 2.0)`);
recordFigure({ name: 'in-process.ratio', value: ours / theirs, unit: '×', better: 'higher', bar: 2 });
recordFigure({ name: 'in-process.queueflow', value: ours, unit: 'steps/s', better: 'higher' });
recordFigure({ name: 'in-process.pocketflow', value: theirs, unit: 'steps/s', better: 'higher' });
