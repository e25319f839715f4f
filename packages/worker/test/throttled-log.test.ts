import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { throttledLog } from '../src/throttled-log.js';

describe('throttledLog', () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  it('prints a message once per window and says how often it came in between', () => {
    const lines: string[] = [];
    const log = throttledLog((line) => lines.push(line), 10_000);
    for (let i = 0; i < 15; i++) log('connect ECONNREFUSED'); // one reconnect burst
    log('another error');
    vi.advanceTimersByTime(10_000);
    log('connect ECONNREFUSED');
    expect(lines).toEqual(['connect ECONNREFUSED', 'another error', 'connect ECONNREFUSED (14 more times in 10 s)']);
  });
});
