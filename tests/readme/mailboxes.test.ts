import { describe, expect, it } from 'vitest';
import { folded, readmeSection, runExample, tsExamples } from './readme-example.js';

/** The README's mailbox example runs as written and prints what its last comment says. */
describe('README mailboxes', () => {
  it('runs and prints the documented output', () => {
    const code = tsExamples(readmeSection('## Mailboxes'))[0]!;
    const expected = /console\.log\(.*\);\s*\/\/ (.*)$/m.exec(code)?.[1];
    expect(expected).toBeDefined();
    expect(runExample(code, 'mailboxes')).toBe(folded(expected!));
  });
});
