import { inject } from 'vitest';
import { nanoid } from 'nanoid';

export { deletePrefix } from './redis-prefix.js';

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
