/**
 * normalizePrefix: every prefix it accepts holds a Redis Cluster hash tag (the non-empty text
 * between the first `{` and the first `}` after it), so a run's keys share one slot; a prefix
 * without `{` gets braces around it.
 */
import { describe, expect, it } from 'vitest';
import { normalizePrefix } from '../src/redis-keys.js';

describe('normalizePrefix', () => {
  it('keeps a prefix with a hash tag as it is and wraps one without braces', () => {
    expect(normalizePrefix(undefined)).toBe('{qf}');
    expect(normalizePrefix('{b6acme}')).toBe('{b6acme}');
    expect(normalizePrefix('app{b6acme}')).toBe('app{b6acme}');
    expect(normalizePrefix('x{a}y{}')).toBe('x{a}y{}'); // the tag is the first one: 'a'
    expect(normalizePrefix('b6acme')).toBe('{b6acme}'); // the same keys as '{b6acme}'
  });

  it.each([
    ['{}', 'its hash tag is empty'],
    ['x{}', 'its hash tag is empty'],
    ['{}{a}', 'its hash tag is empty'],
    ['a{b', "its first '{' has no '}' after it"],
    ['}a{', "its first '{' has no '}' after it"],
  ])('refuses %s with a TypeError naming the prefix and what a hash tag is', (prefix, problem) => {
    expect(() => normalizePrefix(prefix)).toThrow(TypeError);
    expect(() => normalizePrefix(prefix)).toThrow(
      `expected \`prefix\` to hold a Redis Cluster hash tag (a non-empty text between the first '{' and the first '}' after it, as in '{qf}'), got \`${prefix}\`: ${problem}`,
    );
  });

  it('names the option as the caller calls it', () => {
    expect(() => normalizePrefix('a{b', '--prefix')).toThrow(/^expected `--prefix` to hold/);
  });
});
