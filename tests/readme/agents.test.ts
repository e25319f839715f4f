import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** The README's agents examples (section "Agents") run as written and print what their last comment says. */
describe('README agents', () => {
  const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
  const section = readme.slice(readme.indexOf('## Agents'), readme.indexOf('## Mailboxes'));
  const examples = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);

  it('has three examples', () => {
    expect(examples).toHaveLength(3);
  });

  it.each(examples.map((code, i) => [i + 1, code] as const))(
    'example %i runs and prints the documented output',
    (i, code) => {
      const expected = /console\.log\(.*\);\s*\/\/ (.*)$/m.exec(code)?.[1];
      expect(expected).toBeDefined();
      const file = fileURLToPath(new URL(`./agents-${i}.generated.ts`, import.meta.url));
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
    },
  );
});
