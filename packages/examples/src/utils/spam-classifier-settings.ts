import { classifierCacheKey } from './classifier-cache.js';
import { TRAIN_PERCENT } from './stable-split.js';

// Apart from spam-classifier.ts: the cache key without loading the NLP and mail packages (the
// test suite's setup looks for the cached model with it before any file starts).

/** Characters of text the classifier reads per document. */
export const FEATURE_CHARS = 20_000;

/** The naive Bayes settings (wink-naive-bayes-text-classifier's `defineConfig`). */
export const NB_CONFIG = { considerOnlyPresence: false, smoothingFactor: 0.5 };

/** The cache key of the model the classifier's code and settings train (see `classifierCacheKey`). */
export function spamClassifierCacheKey(): string {
  return classifierCacheKey({ NB_CONFIG, FEATURE_CHARS, TRAIN_PERCENT });
}
