import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The README's agents example runs as written and prints what its last comment says. */
describe('README agents', () => {
  it('runs and prints the documented output', () => {
    const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const section = readme.slice(readme.indexOf('## Agents'));
    const start = section.indexOf('```ts') + 5;
    const code = section.slice(start, section.indexOf('```', start));
    const expected = /console\.log\(.*\);\s*\/\/ (.*)$/m.exec(code)?.[1];
    expect(expected).toBeDefined();
    const file = fileURLToPath(new URL('./agents.generated.ts', import.meta.url));
    writeFileSync(file, code);
    try {
      const output = execFileSync(process.execPath, ['--import', 'tsx', file], {
        encoding: 'utf8',
        env: { ...process.env, NODE_NO_WARNINGS: '1' },
      });
      expect(output.replace(/\s+/g, ' ').trim()).toBe(expected!.replace(/\s+/g, ' ').trim());
    } finally {
      rmSync(file, { force: true });
    }
  });
});
