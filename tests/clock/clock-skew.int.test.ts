/**
 * Fault: a worker whose clock is off (issue 16, item 8). Deadlines are taken on the Redis
 * server's clock, so a receive timeout set by a worker 30 s ahead or behind fires on time when
 * another worker, with a right clock, wakes the parked run: neither 30 s late nor at once.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Clock, type Message } from '@queueflow/runtime';
import { useRedisHarness } from '../support/redis-harness.js';

type S = { waitedMs?: number; got?: unknown };

/** Waits for a message at `params.address` for `params.timeoutMs`, then records how long it took. */
class Waits extends Node<S> {
  override prep(): Promise<Message | undefined> {
    const { address, timeoutMs } = this.params as { address: string; timeoutMs: number };
    return this.receive(address, { timeoutMs });
  }
  override post(shared: S, message: Message | undefined): void {
    shared.got = message?.body ?? null;
  }
}

const waits = defineFlow('waits-for-timeout', () => new Flow(new Waits({ name: 'waits' })));

/** A clock `offsetMs` off the system's. */
function skewed(offsetMs: number): Clock {
  return {
    now: () => Date.now() + offsetMs,
    setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
    clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  };
}

describe('clock skew between workers', () => {
  const setup = useRedisHarness();

  it.each([30_000, -30_000])(
    'a 3 s receive timeout set on a worker %i ms off fires after about 3 s on a right one',
    async (offsetMs) => {
      const redis = await setup(`skew${offsetMs}`, { flows: [waits], workers: 0 });
      const wrong = await redis.worker({ clock: skewed(offsetMs) });
      const started = Date.now();
      const handle = await redis.engine.start(waits, {} as S, {
        params: { address: `nobody-${offsetMs}`, timeoutMs: 3000 },
      });
      // The skewed worker takes the first step, which parks the run with its deadline.
      await redis.until(handle.id, 'the run to park', (info) => info.status === 'waiting');
      await wrong.close();
      await redis.worker(); // a worker with a right clock wakes it
      const result = await handle.result();
      const elapsedMs = Date.now() - started;
      console.log(`clock ${offsetMs} ms off: a 3 s receive timeout fired after ${elapsedMs} ms`);
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      expect(result.shared.got).toBeNull();
      expect(elapsedMs).toBeGreaterThanOrEqual(2900);
      expect(elapsedMs).toBeLessThan(10_000); // not 30 s late; and not at once (above)
    },
    60_000,
  );
});
