/**
 * The keys under a key prefix, found with SCAN (never KEYS, which blocks the server), and their
 * deletion: the cleanup of every test and benchmark that works under a prefix of its own. Free of
 * vitest, so the benchmarks (run with tsx) use it too.
 */
import { Cluster, Redis } from 'ioredis';

/** A Redis server's URL, or a Redis Cluster's node URLs (as a `{ cluster }` connection names them). */
export type RedisWhere = string | { cluster: string[] };

/** A plain connection (a Cluster for a cluster) for a test's own reads and clean-up. */
export function inspectingConnection(where: RedisWhere): Redis | Cluster {
  const redis =
    typeof where === 'string'
      ? new Redis(where, { maxRetriesPerRequest: 1 })
      : new Cluster(where.cluster, { redisOptions: { maxRetriesPerRequest: 1 } });
  redis.on('error', () => {});
  return redis;
}

/**
 * The keys under `prefix`, one SCAN batch at a time (every master's, on a cluster), those of the
 * deployment's other partitions included: `{tag}` has partitions `{tag:<n>}` (packages/worker
 * src/partitions.ts).
 */
async function* scanPrefix(redis: Redis | Cluster, prefix: string): AsyncGenerator<string[]> {
  const servers = redis instanceof Cluster ? await masters(redis) : [redis];
  const close = prefix.indexOf('}', prefix.indexOf('{') + 1);
  const patterns = [`${prefix}*`, ...(close === -1 ? [] : [`${prefix.slice(0, close)}:*`])];
  for (const server of servers) {
    for (const pattern of patterns) {
      let cursor = '0';
      do {
        const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) yield keys;
      } while (cursor !== '0');
    }
  }
}

/** A cluster's masters (connecting it first, if it is not yet). */
export async function masters(cluster: Cluster): Promise<Redis[]> {
  if (cluster.status === 'wait') await cluster.connect();
  else if (cluster.status !== 'ready') await new Promise((resolve) => cluster.once('ready', resolve));
  return cluster.nodes('master');
}

/** Every key under `prefix`. */
export async function keysUnder(redis: Redis | Cluster, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const keys of scanPrefix(redis, prefix)) found.push(...keys);
  return found;
}

/** Deletes every key under `prefix` of the Redis at `where` (over a connection of its own). */
export async function deletePrefix(where: RedisWhere, prefix: string): Promise<void> {
  const redis = inspectingConnection(where);
  try {
    for await (const keys of scanPrefix(redis, prefix)) {
      // One key per DEL on a cluster: it refuses a DEL whose keys lie in several slots.
      if (redis instanceof Cluster) await Promise.all(keys.map((key) => redis.del(key)));
      else await redis.del(...keys);
    }
  } finally {
    redis.disconnect();
  }
}
