/**
 * DESIGN "Redis": ACL users work. A redis-server whose `default` user is off and whose only user
 * needs a password: workers and clients given `redis://user:password@host:port` run a flow with
 * a fan-out and a mailbox message; a wrong password is refused with Redis's own reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject, type Message } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '@queueflow/worker';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';

type S = { results: Record<string, number>; reply?: JsonObject };

class Square extends Node<S, { n: number }> {
  override post(shared: S): undefined {
    shared.results[`n${this.params.n}`] = this.params.n * this.params.n;
    return undefined;
  }
}
class Squares extends ParallelBatchFlow<S> {
  override prep(): JsonObject[] {
    return [1, 2, 3].map((n) => ({ n }));
  }
}
class AwaitReply extends Node<S> {
  override async exec(): Promise<Message | undefined> {
    return this.receive('acl-test-inbox');
  }
  override post(shared: S, _prep: unknown, message: Message | undefined): undefined {
    shared.reply = message?.body as JsonObject;
    return undefined;
  }
}
const squaresThenReply = defineFlow('acl-squares', () => {
  const squares = new Squares(new Square({ name: 'square' }), { name: 'squares' });
  squares.next(new AwaitReply({ name: 'await-reply' }));
  return new Flow(squares);
});

describe('Redis with an ACL user', () => {
  let server: LocalRedisServer;
  const prefix = testPrefix('acl');

  beforeAll(async () => {
    server = await startRedisServer({ aclUser: { name: 'queueflow-app', password: 's3cret pass' } });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('runs a flow with a fan-out and a mailbox message through workers and a client given the user in the URL', async () => {
    expect(server.url).toMatch(/^redis:\/\/queueflow-app:s3cret%20pass@127\.0\.0\.1:\d+$/);
    const worker = await startWorker({ connection: server.url, flows: [squaresThenReply], prefix, concurrency: 4 });
    const engine = new RedisEngine({ connection: server.url, flows: [squaresThenReply], prefix });
    try {
      const handle = await engine.start(squaresThenReply, { results: {} });
      await engine.send('acl-test-inbox', { ok: true });
      const result = await handle.result();
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      expect(result.shared).toEqual({ results: { n1: 1, n2: 4, n3: 9 }, reply: { ok: true } });
    } finally {
      await engine.close();
      await worker.close();
    }
  });

  it('refuses a wrong password with the reason Redis gives', async () => {
    const wrong = server.url.replace('s3cret%20pass', 'wrong');
    const engine = new RedisEngine({ connection: wrong, flows: [squaresThenReply], prefix });
    try {
      await expect(engine.get('any-run')).rejects.toMatchObject({
        code: 'REDIS_UNAVAILABLE',
        message: expect.stringMatching(
          /^cannot connect to Redis at redis:\/\/queueflow-app@127\.0\.0\.1:\d+: WRONGPASS/,
        ),
      });
    } finally {
      await engine.close();
    }
  });
});
