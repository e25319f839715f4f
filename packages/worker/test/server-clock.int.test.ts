import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setWarningHandler, type Clock } from '@queueflow/runtime';
import { ServerClock } from '../src/server-clock.js';
import { redisUrl } from '../../../tests/support/test-redis.js';

/** This machine's clock, `offsetMs` off the system's; `stall()` makes its next reading come `ms` later (a slow round trip). */
function localClock(offsetMs: number): Clock & { stall(ms: number): void } {
  let stallMs = 0;
  let calls = 0;
  return {
    stall(ms) {
      stallMs = ms;
      calls = 0;
    },
    now() {
      calls += 1;
      // The reading after the TIME reply is `stallMs` later than the one before it.
      return Date.now() + offsetMs + (calls % 2 === 0 ? stallMs : 0);
    },
    setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  };
}

describe('ServerClock', () => {
  let redis: Redis;
  const warnings: string[] = [];
  beforeAll(async () => {
    redis = new Redis(redisUrl());
  });
  beforeEach(() => {
    warnings.length = 0;
    setWarningHandler((code) => warnings.push(code)); // after the suite's quiet handler
  });
  afterAll(async () => {
    await redis.quit();
  });

  it("measures this machine's offset to the server's TIME and warns once about a skew over 1 s", async () => {
    const clock = new ServerClock(redis, localClock(-30_000));
    const offsetMs = await clock.sync();
    expect(offsetMs).toBeGreaterThan(29_000);
    expect(offsetMs).toBeLessThan(31_000);
    expect(Math.abs(clock.now() - Date.now())).toBeLessThan(1000);
    await clock.sync();
    expect(warnings.filter((code) => code === 'QF_CLOCK_SKEW')).toHaveLength(1);
  });

  it('drops a sample whose round trip was slow (a server restarting) instead of taking it as skew', async () => {
    const local = localClock(0);
    const clock = new ServerClock(redis, local);
    const offsetMs = await clock.sync();
    expect(Math.abs(offsetMs)).toBeLessThan(1000);
    local.stall(5000); // the reply came 5 s after the request
    expect(await clock.sync()).toBe(offsetMs);
    expect(warnings).not.toContain('QF_CLOCK_SKEW');
  });
});
