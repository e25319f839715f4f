/**
 * listLocalFiles: every entry with a document's name under a folder, files or not, in path order;
 * folders walked (symbolic links to folders too, without looping), dot-entries and node_modules left out.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listLocalFiles } from '../src/index.js';

describe('listLocalFiles', () => {
  let root: string;
  let outside: string;

  beforeAll(() => {
    root = mkdtempSync(path.join(tmpdir(), 'queueflow-list-'));
    outside = mkdtempSync(path.join(tmpdir(), 'queueflow-list-outside-'));
    const file = (name: string, text = 'a few words\n') => {
      mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
      writeFileSync(path.join(root, name), text);
    };
    file('a.txt');
    file('Upper.EML');
    file('notes/readme.md');
    file('notes/skip.pdf');
    file('folder.md/inside.txt'); // a folder with a document's name: walked, not listed
    file('.hidden.txt');
    file('.git/config.txt');
    file('node_modules/pkg/readme.md');
    writeFileSync(path.join(outside, 'elsewhere.txt'), 'outside the folder\n');
    symlinkSync(outside, path.join(root, 'linked')); // a link to a folder: walked
    symlinkSync(path.join(root, 'a.txt'), path.join(root, 'link-to-a.txt'));
    symlinkSync('..', path.join(root, 'notes', 'up')); // a cycle: not walked again
    symlinkSync('nothing-here.md', path.join(root, 'dangling.md')); // listed: parse names it
    symlinkSync('loop.txt', path.join(root, 'loop.txt')); // a link to itself: listed too
    execFileSync('mkfifo', [path.join(root, 'pipe.eml')]); // listed, never opened here
  });

  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it('lists every entry with a document name, sorted, with kinds and absolute paths', async () => {
    const refs = await listLocalFiles(root);
    expect(refs.map((r) => [r.docId, r.kind])).toEqual([
      ['Upper.EML', 'email'],
      ['a.txt', 'text'],
      ['dangling.md', 'markdown'],
      ['folder.md/inside.txt', 'text'],
      ['link-to-a.txt', 'text'],
      ['linked/elsewhere.txt', 'text'],
      ['loop.txt', 'text'],
      ['notes/readme.md', 'markdown'],
      ['pipe.eml', 'email'],
    ]);
    expect(refs.find((r) => r.docId === 'notes/readme.md')).toEqual({
      docId: 'notes/readme.md',
      source: 'file',
      path: path.join(root, 'notes', 'readme.md'),
      kind: 'markdown',
      trueLabel: null,
      split: null,
    });
  });

  it('takes a relative folder from the working directory', async () => {
    const relative = path.relative(process.cwd(), root);
    expect((await listLocalFiles(relative)).map((r) => r.path)).toEqual(
      (await listLocalFiles(root)).map((r) => r.path),
    );
  });
});
