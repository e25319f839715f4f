import type { StoredWorker, WorkerBeat } from '@queueflow/runtime/kernel';
import type { ScriptedRedis } from './scripts.js';

/** The registry's two keys (RedisKeys `workers()` and `workersSeen()`, partition 0). */
export interface RegistryKeys {
  workers: string;
  seen: string;
}

/**
 * Records a worker in the registry (worker-registry.lua), on the Redis server's clock: `join`
 * records it whatever came before; a beat of a worker another has claimed answers `'fenced'`
 * and records nothing. Used by the run store and by the heartbeat thread, each on its own
 * connection.
 */
export async function beatWorker(
  redis: ScriptedRedis,
  keys: RegistryKeys,
  worker: WorkerBeat,
  join: boolean,
): Promise<'alive' | 'fenced'> {
  const reply = await redis.workerRegistry(keys.workers, keys.seen, join ? 'join' : 'beat', JSON.stringify(worker));
  return reply === 'fenced' ? 'fenced' : 'alive';
}

/** The workers seen within `lapseMs` (`live`), or those not seen, taken out of the registry (`claim`). */
export async function readRegistry(
  redis: ScriptedRedis,
  keys: RegistryKeys,
  op: 'live' | 'claim',
  lapseMs: number,
): Promise<StoredWorker[]> {
  const lapse = Number.isFinite(lapseMs) ? Math.round(lapseMs) : 1e15;
  const found = (await redis.workerRegistry(keys.workers, keys.seen, op, lapse)) as string[];
  return found.map((json) => JSON.parse(json) as StoredWorker);
}

/** A beat's `meta` naming the jobs the worker runs now: `jobs`, their ids comma-separated (none: no field). */
export function jobsMeta(jobs: Iterable<string>): { jobs?: string } {
  const ids = [...jobs].join(',');
  return ids === '' ? {} : { jobs: ids };
}

/**
 * The worker that held job `jobId` when it lost it without a word (its lock expired: BullMQ's
 * stalled-job check gave the job back): the one among `workers` but `self` whose last beat named
 * the job (`meta.jobs`, {@link jobsMeta}).
 */
export function holderOf(workers: readonly StoredWorker[], jobId: string, self: string): StoredWorker | undefined {
  return workers.find((worker) => worker.id !== self && (worker.meta?.jobs?.split(',') ?? []).includes(jobId));
}
