import type { Json } from '../json/json.js';
import type { PatchOperation } from '../json/merge-patches.js';
import type { ChildOutcome } from '../interpreter/step-types.js';
import { corruptRunError } from '../errors/error-record.js';
import { ClaimCheck, hasRefs, refOf, refsIn, replaceRefs, type ValueClaim } from './claim-check.js';
import type { RunStore } from './run-store.js';

/** Texts of stored values kept in a process, by total UTF-16 length (about 2 bytes each). */
const CACHE_CHARS = 32 * 1024 * 1024;

/**
 * The reading side of the claim check (claim-check.ts) for one engine or worker: puts stored forms
 * back together from the values their references name, read from the store once and kept in a
 * small cache (a hash's text never changes, so a cached text is never stale), and makes the
 * {@link ClaimCheck} of each encoding with the engine's `largeValueBytes`.
 */
export class LargeValues {
  /** Value texts by hash, least recently used first. */
  private readonly cache = new Map<string, string>();
  private cachedChars = 0;

  constructor(
    private readonly store: Pick<RunStore, 'values'>,
    /** Values whose JSON is over this many bytes are stored apart; `Infinity`: none. */
    readonly limitBytes: number,
  ) {}

  /** A claim check for one transition's encodings. */
  check(): ClaimCheck {
    return new ClaimCheck(this.limitBytes);
  }

  /**
   * `encoded` with every reference replaced by its value's text (references inside values too):
   * the stored form as it was before its values were set apart. Returns `encoded` itself, without
   * a read, when it holds no reference (the common case: a small `shared`).
   *
   * @throws Error naming a value no longer stored.
   */
  async inflate(encoded: string): Promise<string> {
    let text = encoded;
    while (hasRefs(text)) {
      const texts = await this.texts(refsIn(text));
      text = replaceRefs(text, (hash) => texts.get(hash));
    }
    return text;
  }

  /**
   * {@link LargeValues.inflate} for a stored form of `run`.
   * @throws QueueflowError `CORRUPT_RUN` naming the run and the value no longer stored.
   */
  async inflateOf(encoded: string, run: { id: string; flow: string }): Promise<string> {
    if (!hasRefs(encoded)) return encoded;
    try {
      return await this.inflate(encoded);
    } catch (error) {
      throw corruptRunError(run, `its state references ${(error as Error).message}`);
    }
  }

  /**
   * The claim a transition makes for what `claim` set apart, without the texts of the values the
   * run's current stored form `held` references (its run holds them, so they are stored);
   * `undefined` when nothing was set apart.
   */
  async claimOf(claim: ClaimCheck, held: string | undefined): Promise<ValueClaim | undefined> {
    if (!claim.holdsAny()) return undefined;
    return claim.claim(await this.closure(held).catch(() => new Set<string>()));
  }

  /** Every hash `encoded` references, directly or through the values it references. */
  async closure(encoded: string | undefined): Promise<Set<string>> {
    const found = new Set<string>();
    let next = encoded === undefined ? [] : refsIn(encoded);
    while (next.length > 0) {
      for (const hash of next) found.add(hash);
      const texts = await this.texts(next);
      next = [...texts.values()].flatMap(refsIn).filter((hash) => !found.has(hash));
    }
    return found;
  }

  /** The outcomes with the references in their patches' values replaced by those values. */
  async inflateOutcomes(outcomes: (ChildOutcome | undefined)[]): Promise<(ChildOutcome | undefined)[]> {
    const hashes = new Set<string>();
    for (const outcome of outcomes) {
      if (outcome?.status !== 'completed' || !outcome.patch) continue;
      for (const operation of outcome.patch) if ('value' in operation) collectRefs(operation.value as Json, hashes);
    }
    if (hashes.size === 0) return outcomes;
    const values = new Map<string, string>();
    for (const hash of hashes) values.set(hash, await this.inflate(`{"$qfValue":"${hash}"}`));
    return outcomes.map((outcome) => {
      if (outcome?.status !== 'completed' || !outcome.patch) return outcome;
      const patch = outcome.patch.map((operation) =>
        'value' in operation
          ? ({ ...operation, value: substitute(operation.value as Json, values) } as PatchOperation)
          : operation,
      );
      return { ...outcome, patch };
    });
  }

  /** The texts of `hashes`, from the cache or else the store. @throws Error naming a missing value. */
  private async texts(hashes: readonly string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const missing: string[] = [];
    for (const hash of hashes) {
      const text = this.cache.get(hash);
      if (text === undefined) missing.push(hash);
      else {
        this.cache.delete(hash); // most recently used last
        this.cache.set(hash, text);
        found.set(hash, text);
      }
    }
    if (missing.length > 0) {
      const read = await this.store.values(missing);
      missing.forEach((hash, i) => {
        const text = read[i];
        if (text === undefined) {
          throw new Error(`value ${hash} is not stored (it expired with the last run that referenced it?)`);
        }
        found.set(hash, text);
        this.remember(hash, text);
      });
    }
    return found;
  }

  private remember(hash: string, text: string): void {
    if (text.length > CACHE_CHARS) return;
    this.cache.set(hash, text);
    this.cachedChars += text.length;
    for (const [oldest, old] of this.cache) {
      if (this.cachedChars <= CACHE_CHARS) break;
      this.cache.delete(oldest);
      this.cachedChars -= old.length;
    }
  }
}

function collectRefs(value: Json, into: Set<string>): void {
  if (value === null || typeof value !== 'object') return;
  const hash = refOf(value);
  if (hash !== undefined) return void into.add(hash);
  for (const member of Array.isArray(value) ? value : Object.values(value)) collectRefs(member, into);
}

/** `value` with each reference replaced by a fresh copy of its value (merges may change it in place). */
function substitute(value: Json, values: ReadonlyMap<string, string>): Json {
  if (value === null || typeof value !== 'object') return value;
  const hash = refOf(value);
  const text = hash === undefined ? undefined : values.get(hash);
  if (text !== undefined) return JSON.parse(text) as Json;
  if (Array.isArray(value)) return value.map((member) => substitute(member, values));
  return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, substitute(member, values)]));
}
