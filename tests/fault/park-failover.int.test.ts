/**
 * Issue 32, item 5: a run parked on a mailbox, on a Redis Cluster whose masters have replicas.
 * A send wakes it with two writes in two partitions: the mailbox's takes the run's waiter off,
 * then the run's makes its wake due. Redis replicates asynchronously, so a master killed (kill -9)
 * can lose the second: the run then slept until its park re-check, a minute later.
 *
 * Here the loss is made certain: for the runs that live on the master about to be killed, the
 * mailbox side of the send is done alone (`RedisRunStore.send`, which returns the wake without
 * making it due), as if the wake had been lost with the master; the others are sent to as usual.
 * The master is killed once its replica has caught up. Every collector must end well before the
 * park re-check (60 s): the workers see the failover and make due the wakes of the partitions
 * that moved. The time from the kill to the last collector's end is printed.
 */
import { describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { defineFlow, Flow, Node, type Message } from '@queueflow/runtime';
import {
  CLUSTER_PARTITIONS,
  Partitions,
  RedisEngine,
  RedisRunStore,
  startWorker,
  withScripts,
  type QueueflowWorker,
} from '@queueflow/worker';
import { startRedisCluster, type LocalRedisCluster } from '../support/redis-cluster.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';

const COLLECTORS = 12;

class Collect extends Node<{ got?: unknown }, { address: string; [key: string]: unknown }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override post(shared: { got?: unknown }, message: Message | undefined): undefined {
    shared.got = message?.body ?? null;
    return undefined;
  }
}
const collect = defineFlow('park-failover-collect', () => new Flow(new Collect({ name: 'collect' })));

describe('fault: a cluster master is killed with the wakes of runs parked on it lost', () => {
  it('wakes every parked run within seconds of the failover, not at its park re-check', { retry: 1 }, async () => {
    const cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1000 });
    const connection = { cluster: cluster.urls };
    const prefix = testPrefix('park-failover');
    const partitions = new Partitions(prefix, CLUSTER_PARTITIONS);
    const engine = new RedisEngine({ connection, flows: [collect], prefix });
    const inspect = new Cluster(cluster.urls, { redisOptions: { maxRetriesPerRequest: 1 } });
    inspect.on('error', () => {});
    const store = new RedisRunStore(withScripts(inspect), partitions, {
      retentionSeconds: 3600,
      maxErrors: 50,
      maxStepRecords: 100,
    });
    const workers: QueueflowWorker[] = [];
    try {
      for (let i = 0; i < 2; i++)
        workers.push(await startWorker({ connection, flows: [collect], prefix, concurrency: 8, onError: () => {} }));
      const handles = [];
      for (let i = 0; i < COLLECTORS; i++) {
        const address = `box-${i}`;
        handles.push({ address, handle: await engine.start(collect, {}, { params: { address } }) });
      }
      const runMasters = await mastersOf(
        cluster,
        handles.map(({ handle }) => partitions.of(handle.id).run(handle.id)),
      );
      const killed = runMasters[0]!;
      const onKilled = handles.filter((_, i) => runMasters[i] === killed);
      const elsewhere = handles.filter((each) => !onKilled.includes(each));
      for (const { handle } of handles) {
        await waitFor(`run ${handle.id} to park`, async () => (await engine.get(handle.id))?.status === 'waiting', {
          timeoutMs: 30_000,
        });
      }
      // The wakes of the runs on the doomed master are lost: their waiters taken, nothing made due.
      for (const { address } of onKilled) {
        const { wakes } = await store.send(address, { id: `m.${address}`, body: 'lost wake', sentAt: Date.now() });
        expect(wakes).toHaveLength(1);
      }
      for (const { address } of elsewhere) await engine.send(address, 'sent');
      await untilReplicated(killed);
      const killedAt = Date.now();
      await cluster.nodes.find((node) => node.port === killed)!.kill();

      const ends = await Promise.all(
        handles.map(async ({ handle }) => {
          const result = await handle.result({ timeoutMs: 40_000 });
          expect(result.status, JSON.stringify(result.error)).toBe('completed');
          return Date.now();
        }),
      );
      console.log(
        `${onKilled.length} of ${COLLECTORS} collectors lived on the killed master; the last collector ended ${((Math.max(...ends) - killedAt) / 1000).toFixed(1)} s after the kill`,
      );
    } finally {
      const bounded = (closing: Promise<unknown>): Promise<unknown> =>
        Promise.race([closing.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 20_000).unref())]);
      await bounded(engine.close());
      for (const worker of workers) await bounded(worker.close());
      inspect.disconnect();
      await cluster.stop();
    }
  });
});

/** The port of the master that serves each key's slot, as CLUSTER SLOTS says now. */
async function mastersOf(cluster: LocalRedisCluster, keys: string[]): Promise<number[]> {
  const redis = new Redis(cluster.urls[0]!);
  try {
    const ranges = await redis.cluster('SLOTS');
    return await Promise.all(
      keys.map(async (key) => {
        const slot = (await redis.cluster('KEYSLOT', key)) as number;
        const [, , [, port] = []] = ranges.find(([from, to]) => from <= slot && slot <= to)!;
        return port as number;
      }),
    );
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
