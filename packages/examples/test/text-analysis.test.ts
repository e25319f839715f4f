/**
 * The analysis of texts at the edges: its output crosses the engines, so every number must
 * survive JSON (a NaN fails the step on RedisEngine and LocalEngine, not with `flow.run`).
 */
import { assertJson } from '@queueflow/runtime';
import { describe, expect, it } from 'vitest';
import { analyseText } from '../src/utils/text-analysis.js';

const OPTIONS = { maxChars: 20_000, keywordCount: 8, summarySentences: 2 };

describe('analyseText', () => {
  it.each([
    ['a bare URL', 'http://spineless.org/~mod/pix/octoberMoon.jpg'],
    ['punctuation only', '!!! ??? ...'],
    ['numbers only', '12 34 56'],
    ['an empty text', ''],
  ])('gives finite numbers for %s (corpus email easy-ham-1/00596 is a bare URL)', (_what, text) => {
    const analysis = analyseText(text, OPTIONS);
    expect(() => assertJson(analysis, 'analysis')).not.toThrow();
    for (const [key, value] of Object.entries(analysis.language)) {
      expect(Number.isFinite(value), `language.${key} = ${value}`).toBe(true);
    }
    expect(analysis.language.words).toBe(0);
    expect(analysis.language.readingTimeSecs).toBe(0);
  });
});
