import type { Json } from '@queueflow/runtime';

/**
 * Above this size of `shared` as JSON, in bytes, `queueflow status` prints a summary of it
 * instead (its `--shared` prints it whole): a run's `shared` can hold megabytes (a batch's
 * records), which buried the status.
 */
export const SHARED_SUMMARY_BYTES = 4096;

/** Top-level keys a summary lists; the others are counted. */
const SUMMARY_KEYS = 50;

/** A value shown as it is in a summary when its JSON is at most this long, in bytes. */
const INLINE_VALUE_BYTES = 80;

/**
 * `shared` as `queueflow status` prints it: as it is when its JSON is at most `maxBytes`, else
 * a summary object: a `(summary)` line (the whole size, the number of keys, how to print it
 * whole), then each top-level key (the first {@link SUMMARY_KEYS}) with its value when that is
 * short, or its type, size and length (`(object: 2000 keys, 3145000 bytes)`).
 *
 * @param hint - the command that prints `shared` whole, for the summary line.
 */
export function summariseShared(shared: Json, hint: string, maxBytes = SHARED_SUMMARY_BYTES): Json {
  const total = byteLength(shared);
  if (total <= maxBytes) return shared;
  if (shared === null || typeof shared !== 'object' || Array.isArray(shared)) {
    return `(${describe(shared, total)}; ${hint} prints it whole)`;
  }
  const keys = Object.keys(shared);
  const summary: Record<string, Json> = {
    '(summary)': `${total} bytes of JSON in ${keys.length} keys: too large to print here; ${hint} prints it whole`,
  };
  for (const key of keys.slice(0, SUMMARY_KEYS)) {
    const value = shared[key] as Json;
    const bytes = byteLength(value);
    summary[key] = bytes <= INLINE_VALUE_BYTES ? value : `(${describe(value, bytes)})`;
  }
  if (keys.length > SUMMARY_KEYS) summary['(more)'] = `${keys.length - SUMMARY_KEYS} more keys`;
  return summary;
}

function describe(value: Json, bytes: number): string {
  if (Array.isArray(value)) return `array: ${count(value.length, 'item')}, ${bytes} bytes`;
  if (value !== null && typeof value === 'object')
    return `object: ${count(Object.keys(value).length, 'key')}, ${bytes} bytes`;
  return `${typeof value}: ${bytes} bytes`;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function byteLength(value: Json): number {
  return Buffer.byteLength(JSON.stringify(value) ?? 'null');
}
