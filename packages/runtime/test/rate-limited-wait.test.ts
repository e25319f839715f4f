import { describe, expect, it } from 'vitest';
import { LocalEngine, MIN_RATE_LIMITED_WAIT_MS, Node, RateLimitedError, defineFlow } from '../src/index.js';

describe('RateLimitedError with retryAfterMs 0', () => {
  it('waits at least MIN_RATE_LIMITED_WAIT_MS before the step runs again, not in a busy loop', async () => {
    let calls = 0;
    class Limited extends Node {
      override exec(): string {
        calls += 1;
        if (calls <= 3) throw new RateLimitedError('429, Retry-After: 0', { retryAfterMs: 0 });
        return 'answered';
      }
    }
    const flow = defineFlow('rate-limited-zero', () => new Limited());
    const engine = new LocalEngine({ flows: [flow] });
    const started = performance.now();
    const result = await (await engine.start(flow, {})).result();
    expect(result.status).toBe('completed');
    expect(calls).toBe(4);
    // Timers never fire early: three waits of at least 100 ms each (1 ms of timer rounding each).
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * (MIN_RATE_LIMITED_WAIT_MS - 1));
    await engine.close();
  });
});
