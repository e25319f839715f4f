import { Cluster } from 'ioredis';
import { QueueflowError } from '@queueflow/runtime';
import { invalidOption } from '@queueflow/runtime/kernel';
import type { RedisConnection } from './connection.js';
import { bytesSlot, keySlot } from './key-slot.js';
import { RedisKeys } from './redis-keys.js';

/** An item's task id ends so (taskId in the runtime's scheduler.ts: `-i<index>`, `-r<retry>` when retried). */
const ITEM_TASK = /-i(\d+)(?:-r\d+)?$/;

/** A fan-out child's id: its root run's id, then `.<step>.<index>` once per level of fan-out. */
const CHILD_ID = /^[^.]+(?:\.\d+\.\d+)+$/;

/** Hash slots of a Redis Cluster. */
const SLOTS = 16384;

/** Most partitions a deployment may have. */
export const MAX_PARTITIONS = 1024;

/**
 * Partitions of a new deployment on a Redis Cluster unless told otherwise: room for 16 masters
 * (on one server, a deployment has 1: its keys share one hash tag, as before partitions).
 */
export const CLUSTER_PARTITIONS = 16;

/**
 * The key prefixes of a deployment's `count` partitions, each with a hash tag of its own.
 * Partition 0 is the deployment's prefix itself (`{qf}`), so a deployment of one partition names
 * the keys it always did. Partition p \> 0 adds `:<n>` inside the hash tag (`{qf:7}`; a user's
 * prefix cannot hold `:`, so no other deployment's prefix is one of these), with `n` picked so that
 * the partitions' hash slots fall in `count` different equal ranges of the 16384 slots. A cluster
 * gives each master a range of slots (`redis-cli --cluster create` even ones), so the partitions
 * spread over the masters as evenly as their slots do.
 *
 * @see https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags
 */
export function partitionPrefixes(prefix: string, count: number): string[] {
  if (count === 1) return [prefix];
  const open = prefix.indexOf('{');
  const close = prefix.indexOf('}', open + 1);
  const [before, tag, after] = [prefix.slice(0, open + 1), prefix.slice(open + 1, close), prefix.slice(close)];
  const rangeOf = (slot: number): number => Math.floor((slot * count) / SLOTS);
  const prefixes = [prefix];
  const taken = new Set([rangeOf(keySlot(prefix))]);
  for (let n = 0; prefixes.length < count; n++) {
    const range = rangeOf(keySlot(`{${tag}:${n}}`));
    if (taken.has(range)) continue;
    taken.add(range);
    prefixes.push(`${before}${tag}:${n}${after}`);
  }
  return prefixes;
}

/**
 * Where each key of a deployment lives when its store is split into partitions (issue 18, README
 * "Scaling out"). A partition is a hash tag: everything one transition script touches is in one
 * partition, so each script stays atomic on a Redis Cluster, and the partitions spread over its
 * masters. A root run lives in the partition of its id, its fan-out children round the partitions
 * from there (see {@link Partitions.indexOf}); a run's tasks are in its partition's BullMQ queues.
 * Partition 0 is home to what the deployment shares: the partition count itself, the worker
 * registry, budgets, schedules and their ticks. What crosses partitions is handed off (README
 * "Scaling out").
 */
export class Partitions {
  /** The keys of each partition, partition 0 first. */
  readonly all: readonly RedisKeys[];

  constructor(
    /** The deployment's prefix (normalized: it holds a hash tag). */
    readonly prefix: string,
    /** How many partitions (1 to {@link MAX_PARTITIONS}). */
    readonly count: number,
  ) {
    this.all = partitionPrefixes(prefix, count).map((each) => new RedisKeys(each));
  }

  /** Partition 0's keys: the deployment's shared keys live there. */
  get home(): RedisKeys {
    return this.all[0]!;
  }

  /**
   * The partition of a run, or of a task (a task id is its run's id, `-`, and more: `<run>-<step>`,
   * `…-p<park>`, `…-i<item>`; run ids hold no `-`). A root run lives in the partition of its id's
   * hash slot; a fan-out child (`<parent>.<step>.<index>`, nested as deep as fan-outs nest) that
   * many places further, counting the sum of the indices in its id: the children of one fan-out
   * go round the partitions, so a large fan-out spreads over the masters. The task of an item of a
   * ParallelBatchNode (`<run>-<step>-i<index>`) goes round them the same way, from its run's: the
   * item's job is in that partition's queue (the item's outcome is recorded on its run, in the
   * run's partition).
   */
  indexOf(runOrTaskId: string): number {
    if (this.count === 1) return 0;
    const dash = runOrTaskId.indexOf('-');
    const runId = dash === -1 ? runOrTaskId : runOrTaskId.slice(0, dash);
    const item = dash === -1 ? null : ITEM_TASK.exec(runOrTaskId);
    let offset = item ? Number(item[1]) : 0;
    // Not a child's id (a root's, or no run's id at all, as a mistyped one): the slot of the whole.
    if (!runId.includes('.') || !CHILD_ID.test(runId)) return (keySlot(runId) + offset) % this.count;
    // `<root>.<step>.<index>[.<step>.<index>…]`: the indices are every other part from the third.
    const parts = runId.split('.');
    for (let i = 2; i < parts.length; i += 2) offset += Number(parts[i]);
    return (keySlot(parts[0]!) + offset) % this.count;
  }

  /** The keys of the partition of a run (or task): see {@link Partitions.indexOf}. */
  of(runOrTaskId: string): RedisKeys {
    return this.all[this.indexOf(runOrTaskId)]!;
  }

  /**
   * The partition of a mailbox address: CRC16 of its UTF-8 bytes, mod 16384, mod the count
   * (`isLocal` in lua/run-lifecycle.lua computes the same).
   */
  indexOfAddress(address: string): number {
    return this.count === 1 ? 0 : bytesSlot(address) % this.count;
  }

  /** The keys of the partition of a mailbox address. */
  ofAddress(address: string): RedisKeys {
    return this.all[this.indexOfAddress(address)]!;
  }
}

/**
 * `items` grouped by `keyOf` (their partition, mostly: a cluster takes a pipeline or a script
 * only within one slot), each group in the items' order, groups in order of first appearance.
 * (Node 20 has no `Map.groupBy`.)
 */
export function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/**
 * Checks a configured partition count.
 * @throws TypeError naming `owner`, `partitions` and the value: not an integer from 1 to {@link MAX_PARTITIONS}.
 */
export function checkPartitions(owner: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_PARTITIONS) {
    throw invalidOption(owner, 'partitions', `an integer from 1 to ${MAX_PARTITIONS}`, value);
  }
  return value;
}

/**
 * The partition count of the deployment under `prefix`, stored once in its settings hash
 * (`<prefix>:settings`, field `partitions`) so that every client and worker agrees: the stored
 * one, else `configured`, else {@link CLUSTER_PARTITIONS} on a cluster and 1 on one server. Reads
 * only; `stored` says whether a count was stored, else {@link storePartitions} must store it
 * before anything is written under it (a worker at its start, a client at its first write: a
 * client that only reads writes nothing).
 *
 * @throws QueueflowError `INVALID_OPTION` when `configured` differs from the stored count (naming
 *   both and the key), or when the stored one is not a count.
 */
export async function readPartitions(
  redis: RedisConnection,
  prefix: string,
  configured: number | undefined,
  owner: string,
): Promise<{ partitions: Partitions; stored: boolean }> {
  const key = new RedisKeys(prefix).settings();
  const text = await redis.hget(key, 'partitions');
  if (text === null) {
    const count = configured ?? (redis instanceof Cluster ? CLUSTER_PARTITIONS : 1);
    return { partitions: new Partitions(prefix, count), stored: false };
  }
  const stored = Number(text);
  if (!Number.isInteger(stored) || stored < 1 || stored > MAX_PARTITIONS) {
    throw new QueueflowError('INVALID_OPTION', `${key} holds partitions = \`${text}\`, not a partition count`, {
      retryable: false,
    });
  }
  if (configured !== undefined && configured !== stored) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: \`partitions\` is ${configured}, but the deployment under prefix ${prefix} has ${stored} (stored in ${key}): every client and worker must use the same count; leave \`partitions\` unset to use the stored one`,
      { retryable: false },
    );
  }
  return { partitions: new Partitions(prefix, stored), stored: true };
}

/**
 * Stores `count` as the deployment's partition count unless one is stored already (`HSETNX`),
 * before the first thing written under it: what a client wrote under a count nobody stored would
 * be lost to workers that store another (its runs in partitions they do not have). Returns the
 * stored count: `count`, or one another client or worker stored meanwhile.
 *
 * @throws QueueflowError `INVALID_OPTION` when a count over 1 would be stored for a deployment
 *   that holds runs written with no count stored: from before partitions (every writer stores the
 *   count first), they live in partition 0 of one.
 */
export async function storePartitions(
  redis: RedisConnection,
  prefix: string,
  count: number,
  owner: string,
): Promise<number> {
  const keys = new RedisKeys(prefix);
  const key = keys.settings();
  // Runs first, then the count: a writer that stored the count just now has stored it before its run.
  if (count > 1 && (await redis.exists(keys.runs())) === 1 && (await redis.hget(key, 'partitions')) === null) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: \`partitions\` is ${count}, but the deployment under prefix ${prefix} holds runs of one partition already (and no count in ${key}): a deployment's count cannot change; use another prefix`,
      { retryable: false },
    );
  }
  await redis.hsetnx(key, 'partitions', count);
  return Number(await redis.hget(key, 'partitions'));
}

/**
 * The error of a client that took `took` partitions, none being stored when it connected, and
 * found `stored` stored since: its reads and writes would miss the deployment's partitions.
 */
export function countStoredSince(owner: string, prefix: string, took: number, stored: number): QueueflowError {
  return new QueueflowError(
    'INVALID_OPTION',
    `${owner}: took ${took} partitions under prefix ${prefix}, where none was stored when it connected, but ${stored} has been stored since (in ${new RedisKeys(prefix).settings()}): every client and worker must use the same count; create this one again to use the stored count`,
    { retryable: false },
  );
}

/**
 * The error of a client or worker that took `took` partitions and finds `stored` stored now: the
 * deployment was purged (or its Redis restarted empty) and another count stored since, so what it
 * wrote would go to partitions no worker serves.
 */
function countChangedSince(prefix: string, took: number, stored: number | undefined): QueueflowError {
  return new QueueflowError(
    'INVALID_OPTION',
    `took ${took} partitions under prefix ${prefix}, but the deployment under prefix ${prefix} has ${stored ?? 'none'} now (in ${new RedisKeys(prefix).settings()}): it was purged, or its Redis restarted empty, and another count stored since, so what this writes would go to partitions no worker serves; nothing was written: create this client (or worker) again to use the stored count`,
    { retryable: false },
  );
}

/**
 * Writes the deployment's count into the settings of each of its partitions but the first (whose
 * settings hold it already): the scripts that write a run or a message into a partition check it
 * there (create-run.lua, send-message.lua), where they cannot reach partition 0's on a cluster.
 * For a worker at its start, which took the stored count.
 */
async function markPartitions(redis: RedisConnection, partitions: Partitions): Promise<void> {
  await Promise.all(partitions.all.slice(1).map((keys) => redis.hset(keys.settings(), 'partitions', partitions.count)));
}

/**
 * Confirms the count a client or worker took before it writes into partition `index` again, once
 * that partition's settings held no count or another (create-run.lua, send-message.lua answered
 * so): the deployment's count must still be `partitions.count` (stored now, as the first writer
 * does, when none is: after a purge or an empty restart), and the partition's settings then get it.
 * The deployment's count is read again after that: a purge and another count stored in between
 * would leave this count in a partition of another deployment.
 *
 * @throws QueueflowError `INVALID_OPTION` ({@link countChangedSince}) when the deployment has
 *   another count; as {@link storePartitions} does.
 */
async function confirmPartitionCount(
  redis: RedisConnection,
  partitions: Partitions,
  index: number,
  owner: string,
): Promise<void> {
  const { prefix, count } = partitions;
  for (;;) {
    const stored = await storePartitions(redis, prefix, count, owner);
    if (stored !== count) throw countChangedSince(prefix, count, stored);
    if (index === 0) return;
    await redis.hset(partitions.all[index]!.settings(), 'partitions', count);
    const again = await redis.hget(partitions.home.settings(), 'partitions');
    if (again === String(count)) return;
    if (again !== null) throw countChangedSince(prefix, count, Number(again));
    // Purged just now: store it again, as the first writer.
  }
}

/**
 * Runs `write`, a script that writes into partition `index` only if that partition's settings
 * hold the partition count of `partitions` (code -1: another, -2: none; create-run.lua,
 * send-message.lua, send-to-agent.lua), confirming the count and writing it there when they do
 * not ({@link confirmPartitionCount}), then running it again: so a client whose count changed
 * under it (a purge, or a Redis restarted empty, and a worker of another count since) is refused
 * at its next write instead of writing where no worker looks.
 *
 * @throws QueueflowError `INVALID_OPTION` naming both counts.
 */
export async function countChecked<T extends [number, ...unknown[]]>(
  redis: RedisConnection,
  partitions: Partitions,
  index: number,
  owner: string,
  write: () => Promise<T>,
): Promise<T> {
  for (let round = 0; ; round++) {
    const reply = await write();
    if (reply[0] !== -1 && reply[0] !== -2) return reply;
    if (round === 3) {
      const stored = reply[0] === -1 ? Number(reply[1]) : undefined;
      throw countChangedSince(partitions.prefix, partitions.count, stored);
    }
    await confirmPartitionCount(redis, partitions, index, owner);
  }
}

/**
 * The partition count of the deployment under `prefix`, stored now if none was
 * ({@link readPartitions}, then {@link storePartitions}), and written into the settings of each
 * partition ({@link markPartitions}): for a worker, which writes at once.
 * @throws QueueflowError `INVALID_OPTION` as those do.
 */
export async function partitionsOf(
  redis: RedisConnection,
  prefix: string,
  configured: number | undefined,
  owner: string,
): Promise<Partitions> {
  const read = await readPartitions(redis, prefix, configured, owner);
  let { partitions } = read;
  if (!read.stored && (await storePartitions(redis, prefix, partitions.count, owner)) !== partitions.count) {
    // Another client or worker stored a count meanwhile: take it, as if it had been there.
    partitions = (await readPartitions(redis, prefix, configured, owner)).partitions;
  }
  await markPartitions(redis, partitions);
  return partitions;
}
