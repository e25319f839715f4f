import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalEngine } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '@queueflow/worker';
import { useRedisHarness } from '../support/redis-harness.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { awaitsOnLlm, gpuFirst, routed, type RoutedShared } from './routing-flows.js';

const FLOWS = fileURLToPath(new URL('./routing-flows.ts', import.meta.url));

describe('queues: a node names a queue, workers serve queues', () => {
  const prefix = testPrefix('queues');
  let workers: WorkerProcess[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [routed], prefix });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
  });

  it("runs the steps and items of `queue: 'llm'` nodes only on the workers serving llm", async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 2 };
    const [general, llm] = (workers = await Promise.all([
      spawnWorker({ ...options, queues: ['default'] }),
      spawnWorker({ ...options, queues: ['llm'] }),
    ]));
    const served = (await engine.workers()).map((w) => [w.pid, w.queues]);
    expect(served).toEqual(
      expect.arrayContaining([
        [general!.pid, ['default']],
        [llm!.pid, ['llm']],
      ]),
    );

    const handles = await Promise.all(Array.from({ length: 4 }, () => engine.start(routed, { ran: [] })));
    for (const handle of handles) {
      const result = await handle.result();
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      const shared = result.shared as unknown as RoutedShared;
      expect(shared.ran).toEqual([
        { node: 'parse', pid: general!.pid },
        { node: 'summarise', pid: llm!.pid },
        { node: 'embed', pid: llm!.pid }, // its fan-in (post) runs on its queue too
        { node: 'record', pid: general!.pid },
      ]);
      expect(shared.itemPids).toEqual([llm!.pid, llm!.pid, llm!.pid, llm!.pid]);
    }
  }, 120_000);
});

describe('queues: a run whose next queue has no live worker', () => {
  const setup = useRedisHarness();

  it('says so in its status until a worker serving that queue starts', async () => {
    const redis = await setup('no-worker', { flows: [gpuFirst], workers: 1 });
    const handle = await redis.engine.start(gpuFirst, { ran: [] });
    const info = await redis.engine.get(handle.id);
    expect(info).toMatchObject({ status: 'queued', queue: 'gpu', currentNode: 'render' });
    expect(info?.noWorker).toMatch(/no live worker serves queue 'gpu' \(live workers serve: default\)/);
    const [listed] = await redis.engine.list({ flow: 'gpu-first' });
    expect(listed?.noWorker).toBe(info?.noWorker);

    await redis.worker({ queues: ['gpu'] });
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const ended = await redis.engine.get(handle.id);
    expect(ended?.noWorker).toBeUndefined();
    expect(ended?.queue).toBeUndefined();
  }, 60_000);

  it("wakes a run parked on a mailbox in a step of queue 'llm' there", async () => {
    const redis = await setup('llm-wake', { flows: [awaitsOnLlm], workers: 1 });
    await redis.worker({ queues: ['llm'] });
    const address = `answers-${redis.prefix}`;
    const handle = await redis.engine.start(awaitsOnLlm, { ran: [] }, { params: { address } });
    await redis.until(handle.id, 'the run to park', (info) => info.status === 'waiting');
    await redis.engine.send(address, 'yes');
    const result = await handle.result();
    expect(result.status).toBe('completed');
    expect(result.shared).toMatchObject({ answer: 'yes' });
    expect(await redis.connection.smembers(`${redis.prefix}:queues`)).toEqual(['llm']);
  }, 60_000);

  it('on LocalEngine every queue runs in this process, which serves them all', async () => {
    const engine = new LocalEngine({ flows: [routed, gpuFirst] });
    try {
      const result = await engine.run(routed, { ran: [] });
      expect(result.status).toBe('completed');
      const shared = result.shared as unknown as RoutedShared;
      expect(new Set(shared.ran.map((entry) => entry.pid))).toEqual(new Set([process.pid]));
      expect((await engine.run(gpuFirst, { ran: [] })).status).toBe('completed');
      const [self] = await engine.workers();
      expect(self?.queues).toEqual(['default', 'llm', 'gpu']);
    } finally {
      await engine.close();
    }
  });
});

describe('queues: worker option `queues`', () => {
  it('refuses an empty list or a bad name before connecting', async () => {
    const start = (queues: unknown) =>
      startWorker({ connection: 'redis://127.0.0.1:1', flows: [routed], queues: queues as string[] });
    await expect(start([])).rejects.toThrow('startWorker: expected `queues` to be a non-empty array of queue names');
    await expect(start(['default', 'l lm'])).rejects.toThrow(
      "startWorker: expected `queues[1]` to be a queue name of 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit, got `'l lm'` (string)",
    );
  });
});
