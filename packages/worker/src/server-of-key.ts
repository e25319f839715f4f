import { Cluster, type Redis } from 'ioredis';
import type { RedisConnection } from './connection.js';
import { keySlot } from './key-slot.js';

/**
 * The connection to the server that holds `key`: `redis` itself for one server; on a cluster,
 * the cluster's connection to the master serving the key's slot (the one a command on that key
 * goes through), for commands that are about a connection rather than a key (CLIENT ID, CLIENT
 * UNBLOCK). Loads the cluster's slot map first when it has none yet.
 *
 * @returns the connection, or `undefined` when no master serves the slot (the cluster is failing over).
 */
export async function serverOfKey(redis: RedisConnection, key: string): Promise<Redis | undefined> {
  if (!(redis instanceof Cluster)) return redis;
  const found = masterOf(redis, key);
  if (found) return found;
  await redis.exists(key); // routed by slot: connects, and loads the slot map
  return masterOf(redis, key);
}

function masterOf(cluster: Cluster, key: string): Redis | undefined {
  const nodeKey = cluster.slots[keySlot(key)]?.[0];
  if (nodeKey === undefined) return undefined;
  return cluster.nodes('master').find(({ options }) => `${options.host}:${options.port}` === nodeKey);
}
