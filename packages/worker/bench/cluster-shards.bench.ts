/**
 * Redis Cluster, per shard (issue 18): the same sequential and fan-out workloads on a local
 * cluster of 1 and of 3 masters (started here: redis-server and redis-cli must be installed), a
 * store of 16 partitions, one worker in this process. Many runs at once: a run lives in one
 * partition (its fan-out children with it), so a deployment's load spreads over the shards by run.
 *
 * Per master, from INFO commandstats (reset before each workload): the commands it ran, its CPU
 * time in them (µs), its share of the cluster's and that time per step, and the keys it holds
 * after the runs (before clean-up). Then what bounds the run: the worker's CPU time per step
 * (this process, `process.cpuUsage`) against the busiest master's; and the projected steps/s of
 * the store, the rate at which its busiest master would be saturated (1 s of CPU / its µs per step),
 * with that rate per shard (README "Scaling out").
 *
 * Usage: tsx bench/cluster-shards.bench.ts [--runs 50 --steps 20 --fan-outs 10 --children 100 --concurrency 50]
 */
import { parseArgs } from 'node:util';
import type { Cluster, Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, Node, ParallelBatchFlow, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { CLUSTER_PARTITIONS, RedisEngine, startWorker, type ClusterConnection } from '../src/index.js';
import { startRedisCluster } from '../../../tests/support/redis-cluster.js';
import { deletePrefix, inspectingConnection, masters } from '../../../tests/support/redis-prefix.js';
import { formatRate } from './bench-support.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    steps: { type: 'string', default: '20' },
    'fan-outs': { type: 'string', default: '10' },
    children: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '50' },
  },
});
const runs = Number(values.runs);
const steps = Number(values.steps);
const fanOuts = Number(values['fan-outs']);
const children = Number(values.children);
const concurrency = Number(values.concurrency);
setWarningHandler(() => {});

interface Counter {
  count: number;
  limit: number;
}
class Tick extends Node<Counter> {
  override post(shared: Counter): string | undefined {
    shared.count += 1;
    return shared.count < shared.limit ? 'again' : undefined;
  }
}
const chain = defineFlow('bench-shards-chain', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});
class NoOp extends Node {}
class Children extends ParallelBatchFlow<{ n: number }> {
  override prep(shared: { n: number }): JsonObject[] {
    return Array.from({ length: shared.n }, (_, i) => ({ i }));
  }
}
const fanOut = defineFlow('bench-shards-fan-out', () => new Children(new NoOp({ name: 'noop' }), { name: 'children' }));

interface ShardFigures {
  port: number;
  calls: number;
  usec: number;
  keys: number;
}

/** Sum of `calls` and `usec` over every command of INFO commandstats. */
async function commandStats(node: Redis): Promise<{ calls: number; usec: number }> {
  const info = await node.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const [, c, u] of info.matchAll(/calls=(\d+),usec=(\d+)/g)) {
    calls += Number(c);
    usec += Number(u);
  }
  return { calls, usec };
}

async function workload(
  connection: ClusterConnection,
  id: 'sequential' | 'fan-out',
  name: string,
  stepsDone: number,
  body: (engine: RedisEngine) => Promise<void>,
): Promise<void> {
  const prefix = `{bench-shards-${nanoid(6)}}`;
  const flows = [chain, fanOut];
  const options = { connection, flows, prefix, partitions: CLUSTER_PARTITIONS };
  const worker = await startWorker({ ...options, concurrency, onError: () => {} });
  const engine = new RedisEngine(options);
  const inspect = inspectingConnection(connection);
  try {
    const nodes = await masters(inspect as Cluster);
    await Promise.all(nodes.map((node) => node.config('RESETSTAT')));
    const cpu = process.cpuUsage();
    const started = performance.now();
    await body(engine);
    const seconds = (performance.now() - started) / 1000;
    const { user, system } = process.cpuUsage(cpu);
    const figures: ShardFigures[] = await Promise.all(
      nodes.map(async (node) => ({
        port: node.options.port!,
        ...(await commandStats(node)),
        keys: await node.dbsize(),
      })),
    );
    const totalUsec = figures.reduce((sum, f) => sum + f.usec, 0);
    console.log(`  ${name}: ${formatRate(stepsDone / seconds)} steps/s (${seconds.toFixed(2)} s)`);
    for (const f of figures) {
      const share = totalUsec === 0 ? 0 : (100 * f.usec) / totalUsec;
      console.log(
        `    master :${f.port}  calls ${String(f.calls).padStart(7)}  cpu ${String(f.usec).padStart(9)} µs (${share.toFixed(0).padStart(3)}%)  ${(f.usec / stepsDone).toFixed(1).padStart(6)} µs/step  keys ${f.keys}`,
      );
    }
    const busiest = Math.max(...figures.map((f) => f.usec / stepsDone));
    const projected = 1e6 / busiest;
    const figure = `cluster-shards.${figures.length}-masters.${id}`;
    recordFigure({ name: `${figure}.busiest-master`, value: busiest, unit: 'µs/step', better: 'lower' });
    console.log(
      `    bound: the worker, ${((user + system) / stepsDone).toFixed(0)} µs of CPU per step in this process, against ${busiest.toFixed(1)} µs on the busiest master`,
    );
    console.log(
      `    projected: the store saturates its busiest master at ${formatRate(projected)} steps/s, ${formatRate(projected / figures.length)} per shard`,
    );
  } finally {
    await engine.close();
    await worker.close();
    await deletePrefix(connection, prefix);
    inspect.disconnect();
  }
}

for (const shards of [1, 3]) {
  const cluster = await startRedisCluster({ masters: shards });
  const connection = { cluster: cluster.urls };
  try {
    console.log(
      `cluster of ${shards} master${shards > 1 ? 's' : ''}, ${CLUSTER_PARTITIONS} partitions, 1 worker at concurrency ${concurrency}`,
    );
    await workload(
      connection,
      'sequential',
      `${runs} sequential runs of ${steps} steps`,
      runs * steps,
      async (engine) => {
        const results = await Promise.all(
          Array.from({ length: runs }, () => engine.run(chain, { count: 0, limit: steps })),
        );
        const failed = results.find((result) => result.status !== 'completed');
        if (failed) throw new Error(`a sequential run failed: ${JSON.stringify(failed.error)}`);
      },
    );
    // A fan-out's steps: the parent's two and one per child.
    await workload(
      connection,
      'fan-out',
      `${fanOuts} fan-outs of ${children} children`,
      fanOuts * (children + 2),
      async (engine) => {
        const results = await Promise.all(Array.from({ length: fanOuts }, () => engine.run(fanOut, { n: children })));
        const failed = results.find((result) => result.status !== 'completed');
        if (failed) throw new Error(`a fan-out failed: ${JSON.stringify(failed.error)}`);
      },
    );
  } finally {
    await cluster.stop();
  }
}
