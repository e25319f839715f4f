import { createHash } from 'node:crypto';

/**
 * A stable 32-bit hash of a string (the first 4 bytes of its SHA-1): the same in every process,
 * on every machine and Node version, which is what makes the train/test split and the default
 * sample reproducible.
 */
export function stableHash(text: string): number {
  return createHash('sha1').update(text, 'utf8').digest().readUInt32BE(0);
}

/** Share of the corpus the classifier trains on, in percent. */
export const TRAIN_PERCENT = 70;

/**
 * The side of the fixed split a corpus document is on: `train` for a stable
 * {@link TRAIN_PERCENT}% of document ids, `test` (held out, evaluated) for the rest.
 */
export function splitOf(docId: string): 'train' | 'test' {
  return stableHash(`split:${docId}`) % 100 < TRAIN_PERCENT ? 'train' : 'test';
}
