import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { DocumentKind, DocumentRef } from '../documents/types.js';

/** The file types read from a user's folder, by extension. */
const KINDS: Record<string, DocumentKind> = { '.eml': 'email', '.txt': 'text', '.md': 'markdown' };

/**
 * The `.eml`, `.txt` and `.md` entries under `dir` (recursively, following symbolic links to
 * folders; dot-files, dot-folders and `node_modules` skipped) as {@link DocumentRef}s sorted by
 * path. Ids are the paths relative to `dir`; `path` is absolute, so on the distributed engine
 * every worker must see the same folder there.
 *
 * Every entry with such a name is listed, whatever it is: a FIFO, a socket or a symbolic link to
 * nothing fails in the parse stage as `UNREADABLE` with the reason, like any other bad document,
 * instead of being left out without a word. (A glob library lists only what it can read as a file;
 * reading a FIFO would block.) Only folders are walked, not listed; a folder that cannot be read
 * is skipped, and a link back to a folder above is not followed again.
 */
export async function listLocalFiles(dir: string): Promise<DocumentRef[]> {
  const root = path.resolve(dir);
  const found: string[] = [];
  await walk(root, '', new Set([await realpath(root)]), found);
  return found.sort().map((relative): DocumentRef => ({
    docId: relative,
    source: 'file',
    path: path.join(root, ...relative.split('/')),
    kind: KINDS[path.extname(relative).toLowerCase()] ?? 'text',
    trueLabel: null,
    split: null,
  }));
}

/** Adds the document entries under `folder` to `found`, as `/`-separated paths relative to the root. */
async function walk(folder: string, relative: string, ancestors: ReadonlySet<string>, found: string[]): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch {
    return; // unreadable (permissions), or gone since it was listed
  }
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const full = path.join(folder, entry.name);
    const name = relative === '' ? entry.name : `${relative}/${entry.name}`;
    const isFolder = entry.isDirectory() || (entry.isSymbolicLink() && (await isFolderLink(full)));
    if (isFolder) {
      if (entry.name === 'node_modules') continue;
      const real = await realpath(full).catch(() => undefined);
      if (real === undefined || ancestors.has(real)) continue; // a cycle through a symbolic link
      await walk(full, name, new Set([...ancestors, real]), found);
    } else if (Object.hasOwn(KINDS, path.extname(entry.name).toLowerCase())) {
      found.push(name);
    }
  }
}

async function isFolderLink(link: string): Promise<boolean> {
  const target = await stat(link).catch(() => undefined); // undefined: it points to nothing
  return target?.isDirectory() ?? false;
}
