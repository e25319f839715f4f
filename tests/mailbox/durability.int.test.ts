/**
 * Redis mailboxes are durable: messages wait in Redis until received, whether or not any worker
 * runs, and a parked run outlives the worker that parked it (a send while no worker runs wakes
 * it as soon as one starts).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { collect, type CollectShared } from './mailbox-flows.js';

const FLOWS = fileURLToPath(new URL('./mailbox-flows.ts', import.meta.url));

describe('Redis mailboxes outlive workers', () => {
  const prefix = testPrefix('mbox-durable');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [collect], prefix });
  const workers: WorkerProcess[] = [];
  const start = async (): Promise<WorkerProcess> => {
    const worker = await spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 2 });
    workers.push(worker);
    return worker;
  };

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
  });

  it('keeps messages sent while no worker runs; a parked run wakes on a worker started after its own stopped', async () => {
    // No worker yet: the messages and the run wait in Redis.
    await engine.send('durable', { n: 1 });
    await engine.send('durable', { n: 2 });
    const handle = await engine.start(collect, { got: [] } as CollectShared, {
      params: { address: 'durable', count: 3 },
    });
    expect((await engine.get(handle.id))?.status).toBe('queued');

    // A worker takes both messages, then the run parks for the third.
    const first = await start();
    await waitFor('the run to take two messages and park', async () => {
      const info = await engine.get(handle.id);
      return info?.status === 'waiting' && (info.shared as unknown as CollectShared).got.length === 2;
    });
    // That worker goes away; the third message comes while no worker runs.
    await stopWorkers([first]);
    await engine.send('durable', { n: 3 });
    expect((await engine.get(handle.id))?.status).toBe('waiting');

    // A new worker process finishes the run.
    const second = await start();
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.got.map((m) => m.body)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(second.pid).not.toBe(first.pid);
  });
});
