import { describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { freePort, startRedisServer } from '../../../tests/support/redis-server.js';
import { EndingCluster } from '../src/ending-cluster.js';

/**
 * A cluster whose startup node refuses connections goes `reconnecting` with an empty node pool:
 * the state a failover leaves a client in. Disconnecting it must end it (BullMQ's close waits for
 * `end`); a plain ioredis Cluster stays `disconnecting` for good.
 */
async function reconnectingCluster<C extends Cluster>(make: (port: number) => C): Promise<C> {
  const cluster = make(await freePort());
  cluster.on('error', () => {});
  const reconnecting = new Promise<void>((resolve) => cluster.once('reconnecting', () => resolve()));
  cluster.connect().catch(() => {});
  await reconnecting;
  return cluster;
}

const options = { clusterRetryStrategy: () => 60_000, lazyConnect: true };

/** Whether `cluster` emits `end` before `deadlineMs` (a bound for the failing case only). */
function endsWithin(cluster: Cluster, deadlineMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), deadlineMs);
    cluster.once('end', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

describe('EndingCluster', () => {
  it('ends when disconnected with no node left, where ioredis Cluster does not', async () => {
    const plain = await reconnectingCluster((port) => new Cluster([{ host: '127.0.0.1', port }], options));
    const plainEnds = endsWithin(plain, 300);
    plain.disconnect();
    expect(await plainEnds).toBe(false); // the ioredis behaviour worked around (if fixed upstream, drop the class)
    expect(plain.status).toBe('disconnecting');

    const ending = await reconnectingCluster((port) => new EndingCluster([{ host: '127.0.0.1', port }], options));
    const ends = endsWithin(ending, 10_000);
    ending.disconnect();
    expect(await ends).toBe(true);
    expect(ending.status).toBe('end');
  });

  it('rejects a connect() still pending when it is disconnected, where ioredis Cluster stays pending', async () => {
    // A cluster node holding a few slots: CLUSTER SLOTS answers, the ready check finds the cluster
    // failed (slots not covered, as during a failover), and connect() waits for a ready that
    // never comes, reconnecting in a loop.
    const node = await startRedisServer({ clusterEnabled: true });
    const admin = new Redis(node.url);
    await admin.cluster('ADDSLOTSRANGE', 0, 100);
    const port = Number(new URL(node.url).port);
    const pending = async (cluster: Cluster): Promise<string> => {
      cluster.on('error', () => {});
      const refreshed = new Promise((resolve) => cluster.once('refresh', resolve));
      const connecting = cluster.connect().then(
        () => 'connected',
        (error: Error) => `rejected: ${error.message}`,
      );
      await refreshed; // slots read; the ready check fails next
      await new Promise((resolve) => cluster.once('reconnecting', resolve));
      cluster.disconnect();
      return Promise.race([connecting, new Promise<string>((resolve) => setTimeout(() => resolve('pending'), 300))]);
    };
    const clusterOptions = { lazyConnect: true, clusterRetryStrategy: () => 100 };
    try {
      expect(await pending(new Cluster([{ host: '127.0.0.1', port }], clusterOptions))).toBe('pending');
      expect(await pending(new EndingCluster([{ host: '127.0.0.1', port }], clusterOptions))).toBe(
        'rejected: Connection is closed.',
      );
    } finally {
      admin.disconnect();
      await node.stop();
    }
  });

  it('duplicates as an EndingCluster with the same startup nodes and options', async () => {
    const port = await freePort();
    const cluster = new EndingCluster([{ host: '127.0.0.1', port }], { ...options, scaleReads: 'slave' });
    const copy = cluster.duplicate();
    expect(copy).toBeInstanceOf(EndingCluster);
    expect(copy.options.scaleReads).toBe('slave');
    copy.on('error', () => {});
    const reconnecting = new Promise<void>((resolve) => copy.once('reconnecting', () => resolve()));
    copy.connect().catch(() => {});
    await reconnecting; // it dialled the same unreachable startup node
    const ends = endsWithin(copy, 10_000);
    copy.disconnect();
    expect(await ends).toBe(true);
  });
});
