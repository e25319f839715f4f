/**
 * What parked runs leave in Redis once they have moved on. A parked run is listed in the waiters
 * set of its address (`<prefix>:mailbox:<address>:waiters`, see RedisKeys.mailboxWaiters) until
 * a send to that address wakes it; a run woken by its timeout instead must not stay listed.
 */
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEngine, RedisKeys } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { ask, waitOnce, type AskShared, type WaitOnceShared } from './mailbox-flows.js';

const FLOWS = fileURLToPath(new URL('./mailbox-flows.ts', import.meta.url));

describe('Redis mailboxes clean up after timeouts', () => {
  const prefix = testPrefix('mbox-cleanup');
  const keys = new RedisKeys(prefix);
  const engine = new RedisEngine({ connection: redisUrl(), flows: [waitOnce, ask], prefix });
  const redis = new Redis(redisUrl());
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    worker = await spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 2 });
  }, 120_000);

  afterAll(async () => {
    await engine.close();
    await stopWorkers(worker ? [worker] : []);
    redis.disconnect();
    await deletePrefix(redisUrl(), prefix);
  });

  /** Every waiters set under the prefix. */
  function waiterSets(): Promise<string[]> {
    return redis.keys(keys.mailboxWaiters('*'));
  }

  it('leaves no waiters set behind once runs woken by their timeout have ended', async () => {
    const waited = await engine.run(waitOnce, {} as WaitOnceShared, { params: { address: 'lonely', timeoutMs: 200 } });
    const asked = await engine.run(ask, { answers: [] } as AskShared, {
      params: { address: 'nobody', questions: ['?'], timeoutMs: 200 },
    });
    expect(waited.shared.got).toBeNull();
    expect(asked.shared.answers).toEqual([null]);
    // The unanswered question stays for a later receiver (durable); nothing else is left.
    expect(await redis.llen(keys.mailbox('nobody'))).toBe(1);
    expect(await waiterSets()).toEqual([]);
  });
});
