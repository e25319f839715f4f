import { describe, expect, it } from 'vitest';
import { formatSeconds } from '../src/cli/progress-bar.js';

describe('durations on the progress line', () => {
  it('never prints NFs or 5m60s', () => {
    expect(formatSeconds('INF')).toBe('?');
    expect(formatSeconds('NULL')).toBe('?');
    expect(formatSeconds(Number.POSITIVE_INFINITY)).toBe('?');
    expect(formatSeconds(359.6)).toBe('6m');
    expect(formatSeconds(359.4)).toBe('5m 59s');
    expect(formatSeconds(0)).toBe('0s');
    expect(formatSeconds(3725)).toBe('1h 2m');
  });
});
