import { nanoid } from 'nanoid';
import type { RedisKeys } from './redis-keys.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * How long a value's text staged for a transition is kept unless the transition claims it, in
 * seconds: a transition lands within moments of its staging.
 */
const STAGED_VALUE_SECONDS = 3600;

/**
 * Stores `texts` (value texts by hash, the claim check) under staging keys of `keys`' partition,
 * before the transition that claims them, in one round trip, and returns the hash, staging key
 * pairs its script takes after its fixed ARGV (stagedValues in run-lifecycle.lua), `[]` for no
 * text. A large value so never passes through a script: Redis runs one script at a time, and one
 * that copies megabytes stalls every client. A transition that is refused leaves them to
 * {@link dropStaged}; a staged text expires after an hour should its transition never reach Redis.
 */
export async function stageTexts(
  redis: ScriptedRedis,
  keys: RedisKeys,
  texts: Readonly<Record<string, string>>,
): Promise<string[]> {
  const entries = Object.entries(texts);
  if (entries.length === 0) return [];
  const token = nanoid(8);
  const pipeline = redis.pipeline();
  const pairs: string[] = [];
  for (const [hash, text] of entries) {
    const key = keys.stagedValue(hash, token);
    pipeline.set(key, text, 'EX', STAGED_VALUE_SECONDS);
    pairs.push(hash, key);
  }
  await pipeline.exec();
  return pairs;
}

/** Deletes the staging keys of a transition that did not claim them (`pairs`: from stageTexts). */
export async function dropStaged(redis: ScriptedRedis, pairs: readonly string[]): Promise<void> {
  const keys = pairs.filter((_, i) => i % 2 === 1);
  if (keys.length > 0) await redis.unlink(...keys);
}
