import type { Redis } from 'ioredis';

/**
 * Deletes every key under `prefix` (`<prefix>:…`: runs, jobs, mailboxes, workers of one
 * deployment), found with SCAN (never KEYS, which blocks the server) and removed with UNLINK (the
 * memory is freed in the background), a batch at a time.
 *
 * @returns the number of keys deleted.
 */
export async function purgePrefix(redis: Redis, prefix: string): Promise<number> {
  let deleted = 0;
  const stream = redis.scanStream({ match: `${escapeGlob(prefix)}:*`, count: 1000 });
  for await (const keys of stream as AsyncIterable<string[]>) {
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  }
  return deleted;
}

/** `text` as a SCAN MATCH pattern that matches it literally (glob characters escaped). */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
