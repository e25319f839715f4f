/**
 * 1,000 followers of 1,000 runs on one RedisEngine share one blocking connection (XREAD BLOCK
 * over every followed stream at once): following them opens one connection, not 1,000. Counted
 * as the TCP sockets of this process before and while they follow.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { RunHandle, StreamEntry } from '@queueflow/runtime';
import { RedisEngine, startWorker, type QueueflowWorker } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor, within } from '../support/wait-for.js';
import { hello } from './stream-flows.js';

const RUNS = 1000;

/** TCP sockets open in this process (Redis connections, here). */
function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((type) => type === 'TCPSocketWrap').length;
}

describe('streams: many followers', () => {
  const prefix = testPrefix('stream-many');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [hello], prefix });
  let worker: QueueflowWorker | undefined;

  afterAll(async () => {
    await worker?.close();
    await engine.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it(`${RUNS} followers of ${RUNS} runs hold one connection, and each gets its run's stream`, async () => {
    const handles: RunHandle<{ n: number }>[] = [];
    for (let n = 0; n < RUNS; n += 100) {
      handles.push(...(await Promise.all(Array.from({ length: 100 }, (_, i) => engine.start(hello, { n: n + i })))));
    }
    const before = tcpSockets();
    const streams = handles.map(async (handle) => {
      const entries: StreamEntry[] = [];
      for await (const entry of engine.stream(handle.id)) entries.push(entry);
      return entries;
    });
    // Every follower is waiting now (the runs are queued: no worker yet).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const following = tcpSockets();
    expect(
      following - before,
      `sockets: ${before} before following, ${following} while ${RUNS} follow`,
    ).toBeLessThanOrEqual(1);

    worker = await startWorker({ connection: redisUrl(), flows: [hello], prefix, concurrency: 50 });
    const all = await within(Promise.all(streams), 60_000, 'the followers did not all end');
    all.forEach((entries, n) =>
      expect(
        entries.map((e) => e.data),
        `run ${n}`,
      ).toEqual([{ hello: n }]),
    );
    await waitFor('the last result', async () => (await engine.get(handles.at(-1)!.id))?.status === 'completed');
  }, 120_000);
});
