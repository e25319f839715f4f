import { readFileSync } from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Json, JsonObject } from '@queueflow/runtime';
import { checkPriority, checkQueueName, type PatchOperation } from '@queueflow/runtime/kernel';
import { clusterNodesOf } from '../cluster-connection.js';
import type { ConnectionOption } from '../connection.js';
import { normalizePrefix } from '../redis-keys.js';

/** The prefix every command uses unless told otherwise (`--prefix`, then `QUEUEFLOW_PREFIX`). */
const DEFAULT_PREFIX = '{qf}';

/** This package's version (runtime and worker are released together). */
export const QUEUEFLOW_VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** What every command that talks to Redis is given. */
export interface ConnectionFlags {
  redis: string;
  /** Startup node URLs of a Redis Cluster (`--cluster`), which `--redis` then does not name. */
  cluster?: string[];
  prefix: string;
}

export const redisOption = (): Option =>
  new Option('--redis <url>', 'Redis URL (redis:// or rediss://)').env('REDIS_URL').default('redis://127.0.0.1:6379');

/** `--cluster URL,URL`: a Redis Cluster instead of `--redis` (checked in {@link checkConnectionFlags}). */
export const clusterOption = (): Option =>
  new Option('--cluster <urls>', 'Redis Cluster instead of --redis: startup node URLs, comma-separated')
    .env('QUEUEFLOW_CLUSTER')
    .argParser(parseCluster);

/** The URLs of `--cluster URL,URL`; throws InvalidArgumentError naming the entry that is wrong. */
function parseCluster(value: string): string[] {
  const urls = value
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  try {
    clusterNodesOf(urls, '--cluster');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return urls;
}

/**
 * Refuses `--redis` and `--cluster` given together on the command line (two answers to where
 * Redis is); `REDIS_URL` in the environment gives way to `--cluster`. Refuses a `--prefix` the
 * engine would refuse, before the command loads its modules or a flows module.
 *
 * @throws Error naming both options, TypeError naming what is wrong with the prefix.
 */
export function checkConnectionFlags(command: Command): void {
  if (command.getOptionValue('cluster') !== undefined && command.getOptionValueSource('redis') === 'cli') {
    throw new Error('--redis and --cluster both say where Redis is: pass one of them');
  }
  const prefix: unknown = command.getOptionValue('prefix');
  if (typeof prefix === 'string') normalizePrefix(prefix, '--prefix');
}

/** Where Redis is, from `--cluster` when given, else `--redis`. */
export function connectionOf(options: ConnectionFlags): ConnectionOption {
  return options.cluster ? { cluster: options.cluster } : options.redis;
}

/** Where a command connects, for people: the URL (or the cluster's URLs) without a password. */
export function describeConnection(options: ConnectionFlags): string {
  const urls = options.cluster ?? [options.redis];
  const shown = urls.map((text) => {
    try {
      const url = new URL(text);
      if (url.password) url.password = '***';
      return url.toString().replace(/\/$/, '');
    } catch {
      return text;
    }
  });
  return options.cluster ? `cluster ${shown.join(',')}` : shown[0]!;
}

export const prefixOption = (): Option =>
  new Option('--prefix <prefix>', 'key prefix shared by clients and workers')
    .env('QUEUEFLOW_PREFIX')
    .default(DEFAULT_PREFIX);

export const jsonOption = (): Option => new Option('--json', 'print JSON (one document) instead of text');

/** ` --prefix '<p>'` to repeat in a hint, or nothing for the default prefix. */
export function prefixHint(prefix: string): string {
  return prefix === DEFAULT_PREFIX ? '' : ` --prefix '${prefix}'`;
}

export function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1)
    throw new InvalidArgumentError(`expected an integer from 1 and up, got '${value}'`);
  return number;
}

/** A comma-separated list of queue names (`default,llm`), each checked. */
export function queueList(value: string): string[] {
  const names = value.split(',').map((name) => name.trim());
  try {
    return names.map((name) => checkQueueName('--queues', 'each name', name));
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** A comma-separated list of partitions (`0,3,4`), each an integer from 0 (startWorker checks the upper bound). */
export function partitionList(value: string): number[] {
  return value.split(',').map((entry) => {
    const number = Number(entry.trim());
    if (entry.trim() === '' || !Number.isInteger(number) || number < 0)
      throw new InvalidArgumentError(
        `expected partitions from 0, comma-separated, got '${entry.trim()}' in '${value}'`,
      );
    return number;
  });
}

/** A run's priority: an integer from 1 (runs first) to 2,097,151 (BullMQ's range). */
export function priorityOption(value: string): number {
  const number = Number(value);
  try {
    // Text that is no number is checked as given: its message would name NaN.
    return checkPriority(Number.isNaN(number) ? value : number, '--priority')!;
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

export function nonNegativeInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw new InvalidArgumentError(`expected an integer from 0 and up, got '${value}'`);
  return number;
}

export function parseJson(value: string): Json {
  try {
    return JSON.parse(value) as Json;
  } catch (error) {
    throw new InvalidArgumentError(`not JSON: ${(error as Error).message}`);
  }
}

/** A `--patch` value: a JSON array of RFC 6902 operations. */
export function parsePatch(value: string): PatchOperation[] {
  const parsed = parseJson(value);
  if (!Array.isArray(parsed)) throw new Error(`--patch: expected a JSON array of operations, got ${typeof parsed}`);
  return parsed as unknown as PatchOperation[];
}

export function parseJsonObject(value: string): JsonObject {
  const parsed = parseJson(value);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new InvalidArgumentError('expected a JSON object');
  return parsed as JsonObject;
}

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A point in time for `--since`: an ISO date (`2026-12-01`, `2026-12-01T09:30:00Z`) or a duration
 * back from now (`90s`, `10m`, `2h`, `1d`). Returns epoch ms.
 */
export function parseSince(value: string, now = Date.now()): number {
  const duration = DURATION.exec(value);
  if (duration) return now - Number(duration[1]) * UNIT_MS[duration[2]!]!;
  const time = Date.parse(value);
  if (Number.isNaN(time))
    throw new InvalidArgumentError(`expected an ISO date or a duration such as 10m, 2h or 1d, got '${value}'`);
  return time;
}
