/**
 * At-least-once delivery with recognisable redeliveries: a worker is SIGKILLed while its step
 * holds a received message (after `receive`, before the commit). The message is not lost: the
 * step runs again on another worker and gets the same message with the same id. It is consumed
 * once (the run keeps it once), and what the step sends leaves once (one ack per message).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine, RedisKeys } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { slowConsume, type CollectShared } from './mailbox-flows.js';

const FLOWS = fileURLToPath(new URL('./mailbox-flows.ts', import.meta.url));
const COUNT = 5;

describe('fault: SIGKILL the worker holding a received message', () => {
  const prefix = testPrefix('mbox-redeliver');
  const keys = new RedisKeys(prefix);
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-redeliver-'));
  const engine = new RedisEngine({ connection: redisUrl(), flows: [slowConsume], prefix });
  let workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  /** `<pid> <message id>` lines, one per exec: which process held which message. */
  const consumed = (): { pid: number; id: string }[] => {
    let text: string;
    try {
      text = readFileSync(join(markerDir, 'consume.log'), 'utf8');
    } catch {
      return [];
    }
    return text
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [pid, id] = line.split(' ');
        return { pid: Number(pid), id: id! };
      });
  };

  it('redelivers the message with the same id to another worker; it is consumed once and its ack sent once', async () => {
    // A short lock, so the killed worker's step is taken over within seconds.
    const options = {
      flows: FLOWS,
      redisUrl: redisUrl(),
      prefix,
      concurrency: 2,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    for (let n = 0; n < COUNT; n++) await engine.send('work', { n });
    const params = { address: 'work', ackAddress: 'acks', count: COUNT, execMs: 800, markerDir };
    const handle = await engine.start(slowConsume, { got: [] } as CollectShared, { params });

    // The third message is in a step's exec: the worker running it holds it, uncommitted.
    const held = await waitFor('a worker to hold the third message', () => consumed()[2]);
    const victim = workers.find((w) => w.pid === held.pid);
    expect(victim, `the worker holding the message (pid ${held.pid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');

    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.got.map((m) => m.body)).toEqual(Array.from({ length: COUNT }, (_, n) => ({ n })));
    const ids = result.shared.got.map((m) => m.id);
    expect(new Set(ids).size).toBe(COUNT);

    // The killed step's message came again, same id, in another process; the run kept it once.
    const deliveries = consumed().filter((line) => line.id === held.id);
    expect(deliveries.length).toBe(2);
    expect(deliveries[0]!.pid).toBe(held.pid);
    expect(deliveries[1]!.pid).not.toBe(held.pid);
    expect(ids.filter((id) => id === held.id)).toHaveLength(1);
    expect(ids[2]).toBe(held.id);

    // Each step's ack left once, with its commit; nothing is left in the work mailbox.
    const redis = new Redis(redisUrl());
    try {
      const acks = (await redis.lrange(keys.mailbox('acks'), 0, -1)).map(
        (json) => (JSON.parse(json) as { body: { ack: string } }).body.ack,
      );
      expect(acks).toEqual(ids);
      expect(await redis.llen(keys.mailbox('work'))).toBe(0);
    } finally {
      redis.disconnect();
    }
  }, 120_000);
});
