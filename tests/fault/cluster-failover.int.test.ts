/**
 * Issue 18, item 4: on a Redis Cluster whose masters each have a replica, a store of 16
 * partitions (the default on a cluster) spreads the runs over the masters; the master of the
 * first run's partition is killed (SIGKILL) in the middle of them; its replica takes over, and
 * every run completes with each step committed once: `shared.seen` is 1, 2, …, n with no gap and
 * no duplicate, and the history has one record per step.
 *
 * Redis replicates asynchronously: writes a master acknowledged but had not yet sent to its
 * replica are lost with it (Redis Cluster's documented trade-off). So the master is killed while
 * every run is in `exec` (held on a gate, no commit in flight) once its replica has caught up,
 * and the gates open at once: the steps then commit while the cluster fails over.
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { CLUSTER_PARTITIONS, Partitions, RedisEngine, startWorker, type QueueflowWorker } from '@queueflow/worker';
import { gate } from '../support/node-probes.js';
import { startRedisCluster, type LocalRedisCluster } from '../support/redis-cluster.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';

const RUNS = 6;
const STEPS = 30;
/** The visit each run waits at, in exec, while the master is killed. */
const HOLD_AT = 10;

interface Shared {
  count: number;
  seen: number[];
}

/** The gate every run waits at in exec, and how many wait there: one of each per attempt of the test. */
let held = gate();
let waiting = 0;

class Tick extends Node<Shared> {
  override prep(shared: Shared): number {
    return shared.count + 1;
  }
  override async exec(visit: number): Promise<number> {
    if (visit === HOLD_AT) {
      waiting++;
      await held.promise;
    }
    return visit;
  }
  override post(shared: Shared, _prep: number, visit: number): string | undefined {
    shared.count = visit;
    shared.seen.push(visit);
    return visit < STEPS ? 'again' : undefined;
  }
}

const ticks = defineFlow('failover-ticks', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

describe('fault: a cluster master with a replica is killed in the middle of runs', () => {
  // Retried: under a CPU burner the failover's timing (node timeout, election) can outlast the
  // test's deadlines. Each attempt has a cluster, a prefix, a gate and a counter of its own (a
  // master killed by an earlier attempt has left its slots on a replica-less node).
  it('completes every run on the promoted replica, each step committed once', { retry: 2 }, async () => {
    held = gate();
    waiting = 0;
    const cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1000 });
    const connection = { cluster: cluster.urls };
    const prefix = testPrefix('failover');
    const engine = new RedisEngine({ connection, flows: [ticks], prefix });
    const workers: QueueflowWorker[] = [];
    try {
      for (let i = 0; i < 2; i++)
        workers.push(await startWorker({ connection, flows: [ticks], prefix, concurrency: RUNS, onError: () => {} }));
      const handles = await Promise.all(
        Array.from({ length: RUNS }, () => engine.start(ticks, { count: 0, seen: [] })),
      );
      const results = handles.map((handle) => handle.result({ timeoutMs: 90_000 }));
      await waitFor('every run to wait in exec', () => waiting === RUNS, { timeoutMs: 60_000 });

      const first = handles[0]!.id;
      const master = await masterOf(cluster, new Partitions(prefix, CLUSTER_PARTITIONS).of(first).run(first));
      await untilReplicated(master.port);
      await master.kill();
      held.open();

      for (const [i, result] of (await Promise.all(results)).entries()) {
        expect(result.status, JSON.stringify(result.error)).toBe('completed');
        expect(result.shared.seen).toEqual(Array.from({ length: STEPS }, (_, step) => step + 1));
        const history = await engine.history(handles[i]!.id);
        expect(history.map((record) => record.step)).toEqual(Array.from({ length: STEPS }, (_, step) => step));
      }
    } finally {
      held.open();
      // Known issue: now and then, after a failover, closing a worker or the engine does not
      // settle (seen twice in about ten runs, only on a loaded machine; not found yet). The test's
      // claim is about the runs, so the clean-up waits 20 s at most for each, then stops the
      // cluster anyway (its nodes killed, nothing can hang on them).
      const bounded = (closing: Promise<unknown>): Promise<unknown> =>
        Promise.race([closing.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 20_000).unref())]);
      await bounded(engine.close());
      for (const worker of workers) await bounded(worker.close());
      await cluster.stop();
    }
  });
});

/** The master node serving `key`'s slot, as CLUSTER SLOTS says. */
async function masterOf(cluster: LocalRedisCluster, key: string): Promise<{ port: number; kill(): Promise<void> }> {
  const redis = new Redis(cluster.urls[0]!);
  try {
    const slot = (await redis.cluster('KEYSLOT', key)) as number;
    const ranges = await redis.cluster('SLOTS');
    const [, , [, port] = []] = ranges.find(([from, to]) => from <= slot && slot <= to)!;
    const node = cluster.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`no node of this cluster serves slot ${slot}`);
    return { port: node.port, kill: node.kill };
  } finally {
    redis.disconnect();
  }
}

/** Until the replica of the master at `port` has every write the master has (replication offsets equal). */
async function untilReplicated(port: number): Promise<void> {
  const redis = new Redis(port, '127.0.0.1');
  try {
    await waitFor('the replica to catch up with its master', async () => {
      const info = await redis.info('replication');
      const master = Number(/master_repl_offset:(\d+)/.exec(info)?.[1]);
      const replica = Number(/slave0:.*offset=(\d+)/.exec(info)?.[1]);
      return master > 0 && replica === master;
    });
  } finally {
    redis.disconnect();
  }
}
