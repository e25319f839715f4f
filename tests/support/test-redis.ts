import { inject } from 'vitest';
import { nanoid } from 'nanoid';
import { Redis } from 'ioredis';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the suite's Redis (see global-setup.ts). */
    redisUrl: string;
  }
}

/** URL of the suite's Redis (see global-setup.ts). */
export function redisUrl(): string {
  return inject('redisUrl');
}

/** A key prefix no other test uses, with a hash tag. */
export function testPrefix(name = 'test'): string {
  return `{qf-${name}-${nanoid(8)}}`;
}

/** Deletes every key under `prefix` (a test's cleanup). */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
