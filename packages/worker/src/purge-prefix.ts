import type { RedisConnection } from './connection.js';
import { keySlot } from './key-slot.js';
import { scanKeys } from './scan-keys.js';

/**
 * Deletes every key under `prefix` (`<prefix>:…`: runs, jobs, mailboxes, workers of one
 * deployment, in each of its partitions), found with SCAN (never KEYS, which blocks the server) and removed with UNLINK (the
 * memory is freed in the background), a batch at a time.
 *
 * @returns the number of keys deleted.
 */
export async function purgePrefix(redis: RedisConnection, prefix: string): Promise<number> {
  let deleted = 0;
  // Partition p > 0 of `a{tag}b` is `a{tag:<n>}b` (partitions.ts).
  const close = prefix.indexOf('}', prefix.indexOf('{') + 1);
  const partitions = `${escapeGlob(prefix.slice(0, close))}:*${escapeGlob(prefix.slice(close))}:*`;
  for (const pattern of [`${escapeGlob(prefix)}:*`, partitions]) {
    for await (const keys of scanKeys(redis, pattern, 1000)) {
      // One UNLINK per hash slot: a cluster refuses one whose keys lie in several (CROSSSLOT).
      const bySlot = new Map<number, string[]>();
      for (const key of keys) bySlot.set(keySlot(key), [...(bySlot.get(keySlot(key)) ?? []), key]);
      for (const group of bySlot.values()) deleted += await redis.unlink(...group);
    }
  }
  return deleted;
}

/** `text` as a SCAN MATCH pattern that matches it literally (glob characters escaped). */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
