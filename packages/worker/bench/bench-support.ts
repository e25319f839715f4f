import { deletePrefix } from '../../../tests/support/redis-prefix.js';

/** The Redis the benchmarks use: `REDIS_URL`, else the local default. */
export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** Deletes every key under `prefix` of the benchmarks' Redis. */
export function deleteKeys(prefix: string): Promise<void> {
  return deletePrefix(redisUrl(), prefix);
}

export function formatRate(perSecond: number): string {
  return Math.round(perSecond).toLocaleString('en-US');
}
