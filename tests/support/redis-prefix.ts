/**
 * The keys under a key prefix, found with SCAN (never KEYS, which blocks the server), and their
 * deletion: the cleanup of every test and benchmark that works under a prefix of its own. Free of
 * vitest, so the benchmarks (run with tsx) use it too.
 */
import { Redis } from 'ioredis';

/** The keys under `prefix`, one SCAN batch at a time. */
async function* scanPrefix(redis: Redis, prefix: string): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) yield keys;
  } while (cursor !== '0');
}

/** Every key under `prefix`. */
export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  for await (const keys of scanPrefix(redis, prefix)) found.push(...keys);
  return found;
}

/** Deletes every key under `prefix` of the Redis at `url` (over a connection of its own). */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    for await (const keys of scanPrefix(redis, prefix)) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
