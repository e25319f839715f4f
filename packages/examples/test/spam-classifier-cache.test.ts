/**
 * The spam classifier's cache: a model read from the cache file classifies exactly as the one
 * trained (the pipeline's records must not depend on which process trained), and a file that
 * does not hold the model of its key is a miss, so the load trains over it. One training in all.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifierCacheKey, readCachedClassifier } from '../src/utils/classifier-cache.js';
import { loadSpamClassifier, type SpamClassifier } from '../src/utils/spam-classifier.js';
import { readDocumentBytesSync } from '../src/utils/document-reader.js';
import { sampleCorpus } from '../src/utils/spam-assassin-corpus.js';

describe('spam classifier cache', () => {
  const cacheDir = mkdtempSync(path.join(tmpdir(), 'queueflow-classifier-cache-'));
  let trained: SpamClassifier;

  // Training reads 4,201 emails: a few seconds idle, more on a loaded machine.
  beforeAll(async () => {
    trained = await loadSpamClassifier({ cacheDir });
  }, 180_000);

  afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

  it('trains on a cold cache and writes one file named by the corpus version', () => {
    expect(trained.origin).toMatchObject({ from: 'training' });
    expect(trained.trainedOn).toMatchObject({ spam: 1297, ham: 2904, skipped: 0 });
    expect(readdirSync(cacheDir)).toEqual([path.basename(trained.origin.cacheFile!)]);
    expect(path.basename(trained.origin.cacheFile!)).toMatch(/^spam-classifier-corpus-0\.2\.3-[0-9a-f]{16}\.json$/);
  });

  it('reads the cached model in a later load, and it classifies exactly as the trained one', async () => {
    const cached = await loadSpamClassifier({ cacheDir });
    expect(cached.origin).toMatchObject({ from: 'cache', cacheFile: trained.origin.cacheFile });
    expect(cached.trainedOn).toEqual(trained.trainedOn);
    for (const ref of sampleCorpus(40)) {
      const text = readDocumentBytesSync(ref, 1 << 20).toString('latin1');
      const input = { subject: null, text, senderDomain: ref.docId.includes('spam') ? 'example.biz' : 'example.org' };
      expect(cached.classify(input), ref.docId).toEqual(trained.classify(input));
    }
  });

  it('takes a file that does not hold the model of its key for a miss (the load then trains over it)', () => {
    const file = trained.origin.cacheFile!;
    const key = path.basename(file, '.json');
    expect(classifierCacheKey({ unrelated: true })).not.toBe(key); // the settings are in the key
    expect(readCachedClassifier(cacheDir, key)).toBeDefined();
    const model = readFileSync(file, 'utf8');
    try {
      writeFileSync(file, model.slice(0, 1000)); // truncated
      expect(readCachedClassifier(cacheDir, key)).toBeUndefined();
      writeFileSync(file, JSON.stringify({ key: 'another-key', value: {} })); // another model's
      expect(readCachedClassifier(cacheDir, key)).toBeUndefined();
      expect(readCachedClassifier(cacheDir, 'no-such-key')).toBeUndefined();
    } finally {
      writeFileSync(file, model);
    }
  });
});
