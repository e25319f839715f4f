/**
 * The Redis event feed on the suite's 3-master cluster: ioredis subscribes over one node's
 * connection and, when that connection ends, moves the subscription to another node by itself and
 * tells no one. The feed must notice, tell its listeners to read again (what was published in
 * between is lost), and go on delivering.
 */
import { Cluster, type Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunChange } from '@queueflow/runtime';
import { RedisRunEvents } from '../src/redis-run-events.js';
import { redisClusterUrls } from '../../../tests/support/test-redis.js';
import { waitFor, within } from '../../../tests/support/wait-for.js';

const opened: Cluster[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((cluster) => cluster.quit().catch(() => {})));
});

function cluster(connectionName?: string): Cluster {
  const nodes = redisClusterUrls().map((url) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) }));
  const created = new Cluster(nodes, connectionName ? { redisOptions: { connectionName } } : {});
  opened.push(created);
  return created;
}

/** The node holding the subscriber connection named after `name`, and that connection's id. */
async function subscriberOf(admin: Cluster, name: string): Promise<{ node: Redis; id: string } | undefined> {
  for (const node of admin.nodes('all')) {
    const list = (await node.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
    const line = list.split('\n').find((entry) => entry.includes(`name=ioredis-cluster(subscriber):${name} `));
    const id = line && /\bid=(\d+)/.exec(line)?.[1];
    if (id) return { node, id };
  }
  return undefined;
}

describe('RedisRunEvents on a cluster', () => {
  it('tells its listeners to read again when ioredis moves the subscription to another node', async () => {
    const name = `qf-events-${nanoid(6)}`;
    const [channel, changesChannel] = [`{${name}}:events`, `{${name}}:changes`];
    const events = new RedisRunEvents(cluster(name), channel, changesChannel);
    const heard: string[] = [];
    let resyncs = 0;
    await events.subscribe({ changed: (change: RunChange) => heard.push(change.runId), resync: () => (resyncs += 1) });
    const admin = cluster();
    const publish = (runId: string) =>
      admin.publish(changesChannel, JSON.stringify({ runId, status: 'running', steps: 1 } satisfies RunChange));

    await publish('before');
    await waitFor('the change before', () => heard.includes('before'));
    const subscriber = await waitFor('the subscriber connection', () => subscriberOf(admin, name));
    const before = resyncs;
    await subscriber.node.client('KILL', 'ID', subscriber.id);
    await within(
      waitFor('a resync', () => resyncs > before),
      20_000,
      'the listeners were never told to read again after the subscriber connection ended',
    );
    // Told once subscribed again: a change published now is heard.
    await publish('after');
    await waitFor('the change after', () => heard.includes('after'));
    expect(await subscriberOf(admin, name), 'a new subscriber connection').not.toMatchObject(subscriber);
  });
});
