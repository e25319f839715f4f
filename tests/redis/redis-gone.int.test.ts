/**
 * Issue 30, item 6: one error vocabulary while Redis is down. An engine connected to a Redis that
 * then stops (SIGKILL of a private redis-server) used to reject calls with ioredis's raw
 * `Stream isn't writeable and enableOfflineQueue options is false`. Every call (reads, writes
 * through BullMQ, a stream) now rejects with QueueflowError REDIS_UNAVAILABLE and the message a new
 * engine gets when Redis is down: `cannot connect to Redis at <server>: connect ECONNREFUSED ...`.
 * Once Redis is back, the same engine works again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';

const quick = defineFlow('gone-quick', () => new Flow(new Node({ name: 'only' })));

/** What a call settled with: its error, or `{ resolved }`. */
async function settled(call: () => Promise<unknown>): Promise<unknown> {
  return call().then(
    (resolved: unknown) => ({ resolved }),
    (error: unknown) => error,
  );
}

describe('Redis gone from under a connected engine', () => {
  let server: LocalRedisServer;
  let engine: RedisEngine;

  beforeAll(async () => {
    server = await startRedisServer({ appendOnly: true }); // the run outlives the restart
  });
  afterAll(async () => {
    await engine?.close();
    await server?.stop();
  });

  it('every call rejects with REDIS_UNAVAILABLE as a new engine does, and works again once Redis is back', async () => {
    let refused: () => void = () => {};
    const connectionRefused = new Promise<void>((resolve) => (refused = resolve));
    engine = new RedisEngine({
      connection: server.url,
      flows: [quick],
      prefix: testPrefix('gone'),
      onError: (error) => {
        if ((error as Error & { code?: string }).code === 'ECONNREFUSED') refused();
      },
    });
    const run = await engine.start(quick, {}); // connected, the BullMQ queue ready; no worker
    expect(await engine.get(run.id)).toMatchObject({ status: 'queued' });

    await server.kill();
    await connectionRefused; // ioredis tried to reconnect, and was refused

    const fresh = new RedisEngine({ connection: server.url, flows: [quick], prefix: testPrefix('gone') });
    const asNew = await settled(() => fresh.get(run.id));
    await fresh.close();
    const expected = {
      code: 'REDIS_UNAVAILABLE',
      message: `cannot connect to Redis at ${server.url}: connect ECONNREFUSED 127.0.0.1:${server.port}`,
    };
    expect(asNew).toMatchObject(expected);

    const calls: Record<string, () => Promise<unknown>> = {
      get: () => engine.get(run.id),
      list: () => engine.list(),
      start: () => engine.start(quick, {}),
      cancel: () => engine.cancel(run.id),
      history: () => engine.history(run.id),
      workers: () => engine.workers(),
      send: () => engine.send('gone-mailbox', 'hello'),
      schedules: () => engine.schedules(),
      stream: async () => {
        for await (const entry of engine.stream(run.id)) return entry;
      },
    };
    for (const [name, call] of Object.entries(calls)) {
      const error = await settled(call);
      expect({ name, error }).toMatchObject({ name, error: expected });
      expect((error as Error).message).not.toContain('Stream isn');
    }

    await server.restart();
    await waitFor('the engine to reach Redis again', () =>
      engine.list().then(
        () => true,
        () => false,
      ),
    );
    expect(await engine.get(run.id)).toMatchObject({ status: 'queued' });
  });
});
