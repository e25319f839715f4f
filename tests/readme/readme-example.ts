import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The README's text between `from` and `to` (or its end): the section whose examples a test runs. */
export function readmeSection(from: string, to?: string): string {
  const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
  const start = readme.indexOf(from);
  return readme.slice(start, to === undefined ? undefined : readme.indexOf(to, start));
}

/** The ```ts examples of a section, in order. */
export function tsExamples(section: string): string[] {
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

/**
 * Runs `code` as a user would (a `.ts` file through tsx, in a process of its own) and returns
 * what it printed, its whitespace folded to single spaces.
 */
export function runExample(code: string, name: string): string {
  const file = fileURLToPath(new URL(`./${name}.generated.ts`, import.meta.url));
  writeFileSync(file, code);
  try {
    const output = execFileSync(process.execPath, ['--import', 'tsx', file], {
      encoding: 'utf8',
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    return folded(output);
  } finally {
    rmSync(file, { force: true });
  }
}

/** `text` with its whitespace folded to single spaces, trimmed. */
export function folded(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
