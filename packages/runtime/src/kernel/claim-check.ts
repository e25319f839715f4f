/**
 * The claim check (issue 17, item 4; Enterprise Integration Patterns' "Claim Check"): a value in
 * `shared` whose JSON is over a size (`largeValueBytes`, default 256 KiB) is stored once, apart,
 * and so is a `prep` result or a BatchNode's results held in a checkpoint's frames (a fan-out of
 * a million items holds its list of items there until its fan-in),
 * under the sha256 of its JSON text, and the stored forms that hold it (checkpoints, a fan-out's
 * snapshot, a child's delta, a step record's undo patch, a child's outcome) hold a reference
 * instead: the object `{"$qfValue":"<sha256 hex>"}`. So N children of a parent with a 10 MiB
 * `shared`, or a thousand steps of a run that keeps one, keep the 10 MiB once.
 *
 * Which values: the encoder looks into a plain object over the size first and sets apart its
 * members over the size (at any depth); what is still over the size afterwards (the object
 * itself, holding the references of its members; an array; a string) is set apart whole.
 *
 * An object whose only key is `$qfValue` and whose value is 64 hex digits is the reference form:
 * such an object in `shared` itself is read back as the value it names.
 *
 * Lifetime: a store keeps a value while any run it keeps references it (see
 * {@link ValueClaim}): each transition that writes a stored form claims the values it references
 * for its run in the same atomic step, and a run's claims go when its record goes.
 */
import { createHash } from 'node:crypto';
import type { Json, JsonObject } from '../json/json.js';
import { invalidOption } from '../core/validate-options.js';

/** Default `largeValueBytes`: values whose JSON is over 256 KiB are stored once, apart. */
export const DEFAULT_LARGE_VALUE_BYTES = 256 * 1024;

/**
 * The checked `largeValueBytes` option of `owner`: an integer number of bytes from 1024 up, or
 * `Infinity` (nothing is set apart). @defaultValue {@link DEFAULT_LARGE_VALUE_BYTES}
 * @throws TypeError naming the owner, the option and the value.
 */
export function checkLargeValueBytes(owner: string, value: unknown): number {
  if (value === undefined) return DEFAULT_LARGE_VALUE_BYTES;
  if (value === Infinity || (typeof value === 'number' && Number.isInteger(value) && value >= 1024)) return value;
  throw invalidOption(owner, 'largeValueBytes', 'an integer number of bytes from 1024 and up, or Infinity', value);
}

/** The key of the reference form, `{"$qfValue":"<sha256 hex>"}`. */
const REF_KEY = '$qfValue';

/** A reference as it appears in encoded text (JSON.stringify writes it so, with no spaces). */
const REF_PATTERN = /\{"\$qfValue":"([0-9a-f]{64})"\}/g;

/**
 * The values a transition's stored forms reference, claimed for its run in the same atomic
 * step: every store keeps a value while a run it keeps has claimed it. `texts` carries the JSON
 * text of those that may not be stored yet (a value stored already is left as it is: the text of
 * a hash never changes).
 */
export interface ValueClaim {
  /** sha256 (hex) of every value the written forms reference, nested references included. */
  refs: string[];
  /** JSON text by hash, for the values of `refs` that may not be stored yet. */
  texts: Record<string, string>;
}

/** Whether `encoded` (any stored form) holds a reference to a value stored apart. */
export function hasRefs(encoded: string): boolean {
  return encoded.includes('{"$qfValue":"');
}

/** The hashes `encoded` references directly, in order of first appearance, without repeats. */
export function refsIn(encoded: string): string[] {
  if (!hasRefs(encoded)) return [];
  const found = new Set<string>();
  for (const match of encoded.matchAll(REF_PATTERN)) found.add(match[1]!);
  return [...found];
}

/**
 * Replaces each reference in `encoded` with the text of its value from `texts` (whose texts may
 * hold references in turn: the caller repeats while {@link hasRefs}).
 *
 * @throws Error naming the first hash `texts` has no text for.
 */
export function replaceRefs(encoded: string, texts: (hash: string) => string | undefined): string {
  return encoded.replace(REF_PATTERN, (_, hash: string) => {
    const text = texts(hash);
    if (text === undefined) throw new Error(`value ${hash} is not stored (expired with the runs that held it?)`);
    return text;
  });
}

/** The hash of a reference object, if `value` is one. */
export function refOf(value: Json | undefined): string | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  const hash = value[REF_KEY];
  return keys.length === 1 && typeof hash === 'string' && /^[0-9a-f]{64}$/.test(hash) ? hash : undefined;
}

/**
 * One encoding's claim check: sets values over `limitBytes` apart as it encodes, and collects
 * the claim the transition that writes the encoded forms makes.
 */
export class ClaimCheck {
  private readonly texts = new Map<string, string>();

  constructor(
    /** Values whose JSON is over this many bytes (UTF-8) are set apart; `Infinity`: none. */
    readonly limitBytes: number,
  ) {}

  /** Whether encoded text this long may hold a value over the size (else nothing is walked). */
  mayHold(encoded: string): boolean {
    return this.limitBytes !== Infinity && overLimit(encoded, this.limitBytes);
  }

  /**
   * `shared` (or any JSON value) with its large values replaced by references; `shared` itself is
   * not changed. `text` is its JSON text when the caller has it: below the size, nothing is walked.
   */
  externalize<T extends Json>(value: T, text?: string): T {
    if (this.limitBytes === Infinity || !overLimit(text ?? JSON.stringify(value) ?? '', this.limitBytes)) return value;
    return this.setApart(value, true) as T;
  }

  /** `shared`'s top level stays an object: only its members (and theirs) are set apart. */
  externalizeShared(shared: JsonObject, text?: string): JsonObject {
    if (this.limitBytes === Infinity || !overLimit(text ?? JSON.stringify(shared), this.limitBytes)) return shared;
    return this.members(shared);
  }

  /** Whether anything was set apart. */
  holdsAny(): boolean {
    return this.texts.size > 0;
  }

  /**
   * The claim of everything set apart so far, without the texts of the hashes in `known` (stored
   * already); `undefined` when nothing was set apart.
   */
  claim(known?: ReadonlySet<string>): ValueClaim | undefined {
    if (this.texts.size === 0) return undefined;
    const texts: Record<string, string> = {};
    for (const [hash, text] of this.texts) if (!known?.has(hash)) texts[hash] = text;
    return { refs: [...this.texts.keys()], texts };
  }

  private setApart(value: Json, checked = false): Json {
    if (value === null || typeof value !== 'object') {
      if (typeof value !== 'string' || !overLimit(JSON.stringify(value), this.limitBytes)) return value;
      return this.reference(JSON.stringify(value));
    }
    const text = checked ? undefined : JSON.stringify(value);
    if (text !== undefined && !overLimit(text, this.limitBytes)) return value;
    if (Array.isArray(value)) return this.reference(text ?? JSON.stringify(value));
    if (refOf(value) !== undefined) return value;
    const rest = this.members(value);
    const restText = JSON.stringify(rest);
    return overLimit(restText, this.limitBytes) ? this.reference(restText) : rest;
  }

  private members(object: JsonObject): JsonObject {
    const out: JsonObject = {};
    for (const [key, member] of Object.entries(object)) {
      if (member === undefined) continue;
      out[key] = this.setApart(member);
    }
    return out;
  }

  private reference(text: string): JsonObject {
    const hash = createHash('sha256').update(text).digest('hex');
    this.texts.set(hash, text);
    return { [REF_KEY]: hash };
  }
}

/** Whether `text` is over `limit` bytes in UTF-8, measuring only when its length leaves it open. */
function overLimit(text: string, limit: number): boolean {
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  return Buffer.byteLength(text) > limit;
}
