/**
 * A client whose partition count changed under it (issue 32, item 2): the deployment was purged
 * (or its Redis restarted empty) and a worker stored another count since. Its next write is
 * refused (`INVALID_OPTION`, naming both counts) rather than accepted into partitions no worker
 * serves: every partition's settings hold the count (`<partition>:settings`), and the scripts that
 * write a run or a message there check it. An accepted start always runs.
 *
 * On one Redis with partitions (fast), and the repro on the suite's Redis Cluster.
 */
import { describe, expect, it } from 'vitest';
import { Flow, Node, defineFlow, type RunHandle } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { useRedisHarness } from '../support/redis-harness.js';
import { deletePrefix } from '../support/redis-prefix.js';

class Count extends Node<{ n: number }> {
  override post(shared: { n: number }): undefined {
    shared.n += 1;
  }
}
const counting = defineFlow('stale-count', () => new Flow(new Count({ name: 'count' })));
const flows = [counting];

/** What a start (or a send) of a client with a stale count is refused with. */
const stale = (took: number, stored: number) => ({
  code: 'INVALID_OPTION',
  message: expect.stringMatching(new RegExp(`${took} partitions .* but the deployment .* has ${stored}`)) as unknown,
});

describe('a client with a stale partition count', () => {
  const setup = useRedisHarness();

  it('is refused at its next start and send after a purge and a worker of another count: no run lost', async () => {
    const redis = await setup('stale-refused', { flows, workers: 0, engineOptions: { partitions: 4 } });
    const first = await redis.worker({ partitions: 4 });
    expect((await redis.engine.run(counting, { n: 0 })).status).toBe('completed');
    await first.close();
    await deletePrefix(redis.url, redis.prefix); // `queueflow purge --yes`
    await redis.worker({ partitions: 2 });
    for (let i = 0; i < 10; i++)
      await expect(redis.engine.start(counting, { n: i }), `start ${i}`).rejects.toMatchObject(stale(4, 2));
    await expect(redis.engine.send('stale-inbox', 'hello')).rejects.toMatchObject(stale(4, 2));
    const written = (await redis.scanKeys()).filter((key) => /:run:|:mailbox:/.test(key));
    expect(written).toEqual([]);
    // A client that reads the count now starts runs, and the worker runs them.
    const fresh = new RedisEngine({ connection: redis.url, flows, prefix: redis.prefix });
    try {
      expect((await fresh.run(counting, { n: 0 })).status).toBe('completed');
    } finally {
      await fresh.close();
    }
  });

  it('stores its count again after a purge that no worker followed yet: a worker of another count is refused', async () => {
    const redis = await setup('stale-first-again', { flows, workers: 0, engineOptions: { partitions: 4 } });
    const first = await redis.worker({ partitions: 4 });
    expect((await redis.engine.run(counting, { n: 0 })).status).toBe('completed');
    await first.close();
    await deletePrefix(redis.url, redis.prefix);
    const handles = await Promise.all(Array.from({ length: 6 }, (_, n) => redis.engine.start(counting, { n })));
    await expect(redis.worker({ partitions: 2 })).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await redis.worker({ partitions: 4 });
    for (const handle of handles) expect((await handle.result()).status).toBe('completed');
  });

  it("writes the count into a partition's settings where it is missing (a deployment from before)", async () => {
    const redis = await setup('stale-upgrade', {
      flows,
      workers: 1,
      engineOptions: { partitions: 4 },
      workerOptions: { partitions: 4 },
    });
    const settings = redis.partitions.all.slice(1).map((keys) => keys.settings());
    for (const key of settings) expect(await redis.connection.hget(key, 'partitions')).toBe('4'); // the worker wrote them
    for (const key of settings) await redis.connection.del(key);
    // Run ids are random: start runs until each partition whose settings were deleted got one.
    const handles: RunHandle[] = [];
    const hit = new Set<number>();
    while (hit.size < settings.length) {
      const handle = await redis.engine.start(counting, { n: handles.length });
      handles.push(handle);
      const partition = redis.partitions.indexOf(handle.id);
      if (partition > 0) hit.add(partition);
    }
    for (const handle of handles) expect((await handle.result()).status).toBe('completed');
    await redis.engine.send('stale-upgrade-inbox', 'hello');
    for (const key of settings) expect(await redis.connection.hget(key, 'partitions')).toBe('4');
  });
});

describe('a client with a stale partition count on a Redis Cluster', () => {
  const setup = useRedisHarness();

  it('is refused at its next start after a purge and a worker of 4 partitions (the issue repro)', async () => {
    const redis = await setup('stale-cluster', { flows, cluster: true, workers: 0 });
    await redis.engine.start(counting, { n: 0 }); // stores 16, the default on a cluster
    await deletePrefix(redis.url, redis.prefix);
    await redis.worker({ partitions: 4 });
    for (let i = 0; i < 10; i++)
      await expect(redis.engine.start(counting, { n: i }), `start ${i}`).rejects.toMatchObject(stale(16, 4));
    expect((await redis.scanKeys()).filter((key) => key.includes(':run:'))).toEqual([]);
  });
});
