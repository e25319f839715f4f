import { Cluster } from 'ioredis';
import type { RedisConnection } from './connection.js';

/**
 * The keys matching a SCAN `MATCH` pattern, a batch at a time (SCAN, never KEYS, which blocks
 * the server). On a cluster every master is scanned, one after the other: SCAN sees only the
 * keys of the node it runs on.
 *
 * @param count - SCAN's `COUNT` hint: keys looked at per call.
 */
export async function* scanKeys(redis: RedisConnection, pattern: string, count: number): AsyncGenerator<string[]> {
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const server of servers) {
    for await (const keys of server.scanStream({ match: pattern, count }) as AsyncIterable<string[]>) {
      if (keys.length > 0) yield keys;
    }
  }
}
