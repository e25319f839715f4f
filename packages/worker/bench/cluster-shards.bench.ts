/**
 * Redis Cluster, per shard: the same sequential and fan-out workloads on a local cluster of 1 and
 * of 3 masters (started here: redis-server and redis-cli must be installed), each with one
 * worker in this process. Per master, from INFO commandstats (reset before each workload): the
 * commands it ran, its CPU time in them (µs) and that time per step, and the keys it holds after
 * the runs (before clean-up). Shows where a deployment's load lands: today every key of a
 * prefix shares one hash tag, so one master takes all of it whatever the number of shards
 * (README "Scaling out").
 *
 * Usage: tsx bench/cluster-shards.bench.ts [--steps 500 --children 500 --concurrency 50]
 */
import { parseArgs } from 'node:util';
import type { Cluster, Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineFlow, Flow, Node, ParallelBatchFlow, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { RedisEngine, startWorker, type ClusterConnection } from '../src/index.js';
import { startRedisCluster } from '../../../tests/support/redis-cluster.js';
import { deletePrefix, inspectingConnection, masters } from '../../../tests/support/redis-prefix.js';
import { formatRate } from './bench-support.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '500' },
    children: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '50' },
  },
});
const steps = Number(values.steps);
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
  name: string,
  stepsDone: number,
  body: (engine: RedisEngine) => Promise<void>,
): Promise<void> {
  const prefix = `{bench-shards-${nanoid(6)}}`;
  const flows = [chain, fanOut];
  const worker = await startWorker({ connection, flows, prefix, concurrency, onError: () => {} });
  const engine = new RedisEngine({ connection, flows, prefix });
  const inspect = inspectingConnection(connection);
  try {
    const nodes = await masters(inspect as Cluster);
    await Promise.all(nodes.map((node) => node.config('RESETSTAT')));
    const started = performance.now();
    await body(engine);
    const seconds = (performance.now() - started) / 1000;
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
    console.log(`cluster of ${shards} master${shards > 1 ? 's' : ''}, 1 worker at concurrency ${concurrency}`);
    await workload(connection, `sequential flow, ${steps} steps`, steps, async (engine) => {
      const result = await engine.run(chain, { count: 0, limit: steps });
      if (result.status !== 'completed') throw new Error(`sequential run failed: ${JSON.stringify(result.error)}`);
    });
    // A fan-out's steps: the parent's two and one per child.
    await workload(connection, `fan-out of ${children} children`, children + 2, async (engine) => {
      const result = await engine.run(fanOut, { n: children });
      if (result.status !== 'completed') throw new Error(`fan-out failed: ${JSON.stringify(result.error)}`);
    });
  } finally {
    await cluster.stop();
  }
}
