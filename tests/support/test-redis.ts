import { inject } from 'vitest';
import { nanoid } from 'nanoid';

export { deletePrefix } from './redis-prefix.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the suite's Redis (see global-setup.ts). */
    redisUrl: string;
    /** Node URLs of the suite's Redis Cluster, masters first (see global-setup.ts). */
    redisClusterUrls: string[];
  }
}

/** URL of the suite's Redis (see global-setup.ts). */
export function redisUrl(): string {
  return inject('redisUrl');
}

/** Node URLs of the suite's 3-master Redis Cluster, masters first (see global-setup.ts). */
export function redisClusterUrls(): string[] {
  return inject('redisClusterUrls');
}

/** A key prefix no other test uses, with a hash tag. */
export function testPrefix(name = 'test'): string {
  return `{qf-${name}-${nanoid(8)}}`;
}
