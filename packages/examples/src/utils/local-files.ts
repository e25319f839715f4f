import path from 'node:path';
import { glob } from 'tinyglobby';
import type { DocumentKind, DocumentRef } from '../documents/types.js';

/** The file types read from a user's folder, by extension. */
const KINDS: Record<string, DocumentKind> = { '.eml': 'email', '.txt': 'text', '.md': 'markdown' };

/**
 * The `.eml`, `.txt` and `.md` files under `dir` (recursively; dot-folders and `node_modules`
 * skipped) as {@link DocumentRef}s sorted by path. Ids are the paths relative to `dir`; `path`
 * is absolute, so on the distributed engine every worker must see the same folder there.
 */
export async function listLocalFiles(dir: string): Promise<DocumentRef[]> {
  const root = path.resolve(dir);
  const files = await glob(['**/*.eml', '**/*.txt', '**/*.md'], {
    cwd: root,
    onlyFiles: true,
    dot: false,
    caseSensitiveMatch: false,
    ignore: ['**/node_modules/**'],
  });
  return files.sort().map((relative): DocumentRef => {
    const kind = KINDS[path.extname(relative).toLowerCase()] ?? 'text';
    return {
      docId: relative.split(path.sep).join('/'),
      source: 'file',
      path: path.join(root, relative),
      kind,
      trueLabel: null,
      split: null,
    };
  });
}
