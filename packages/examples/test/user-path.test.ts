/** The command lines' relative paths: from where the user ran npm (INIT_CWD), else the working directory. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveUserPath, userDirectory } from '../src/cli/user-path.js';

describe('resolveUserPath', () => {
  it('takes a relative path from INIT_CWD, the directory npm was run from', () => {
    const env = { INIT_CWD: '/home/ann/project' };
    expect(userDirectory(env)).toBe('/home/ann/project');
    expect(resolveUserPath('./mydocs', env)).toBe('/home/ann/project/mydocs');
    expect(resolveUserPath('out/documents.jsonl', env)).toBe('/home/ann/project/out/documents.jsonl');
    expect(resolveUserPath('../elsewhere/a.jsonl', env)).toBe('/home/ann/elsewhere/a.jsonl');
  });

  it('keeps an absolute path as it is', () => {
    expect(resolveUserPath('/data/mail', { INIT_CWD: '/home/ann' })).toBe('/data/mail');
  });

  it('falls back on the working directory without npm', () => {
    expect(userDirectory({})).toBe(process.cwd());
    expect(resolveUserPath('mydocs', { INIT_CWD: '' })).toBe(path.join(process.cwd(), 'mydocs'));
  });
});
