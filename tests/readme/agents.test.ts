import { describe, expect, it } from 'vitest';
import { folded, readmeSection, runExample, tsExamples } from './readme-example.js';

/** The README's agents examples (section "Agents") run as written and print what their last comment says. */
describe('README agents', () => {
  const examples = tsExamples(readmeSection('## Agents', '## Mailboxes'));

  it('has three examples', () => {
    expect(examples).toHaveLength(3);
  });

  it.each(examples.map((code, i) => [i + 1, code] as const))(
    'example %i runs and prints the documented output',
    (i, code) => {
      const expected = /console\.log\(.*\);\s*\/\/ (.*)$/m.exec(code)?.[1];
      expect(expected).toBeDefined();
      expect(runExample(code, `agents-${i}`)).toBe(folded(expected!));
    },
  );
});
