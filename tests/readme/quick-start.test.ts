import { describe, expect, it } from 'vitest';
import { folded, readmeSection, runExample, tsExamples } from './readme-example.js';

/** The README's quick start runs as written and prints what its last comment says. */
describe('README quick start', () => {
  it('runs and prints the documented output', () => {
    const code = tsExamples(readmeSection('## Quick start'))[0]!;
    const expected = /\/\/ (sorry: .*)$/m.exec(code)?.[1];
    expect(expected).toBeDefined();
    expect(runExample(code, 'quick-start')).toBe(folded(expected!));
  });
});
