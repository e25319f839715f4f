/**
 * Counts in the studio read as English: "1 question", never "1 questions" (issue 31, item 5).
 */
import { describe, expect, it } from 'vitest';
import { plural } from '../src/components/format';

describe('plural', () => {
  it('uses the singular for exactly one', () => {
    expect(plural(1, 'question')).toBe('1 question');
  });

  it('uses the plural for zero and for many', () => {
    expect(plural(0, 'question')).toBe('0 questions');
    expect(plural(3, 'question')).toBe('3 questions');
  });

  it('takes an irregular plural', () => {
    expect(plural(1, 'child', 'children')).toBe('1 child');
    expect(plural(2, 'child', 'children')).toBe('2 children');
  });
});
