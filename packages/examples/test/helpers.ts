import type { DocumentRecord } from '../src/index.js';

/** A record without its timings, which are the only field that differs between runs. */
export function stable(record: DocumentRecord): Omit<DocumentRecord, 'timingMs'> {
  const { timingMs: _timings, ...rest } = record;
  return rest;
}

/** A seeded pseudo-random byte source (mulberry32), so generated fixtures are the same each run. */
export function seededBytes(length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    bytes[i] = ((t ^ (t >>> 14)) >>> 0) & 0xff;
  }
  return bytes;
}
