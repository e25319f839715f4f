/**
 * Issue 16, item 1: Redis frozen (SIGSTOP: its connections stay open, nothing answers). Every
 * RedisEngine call used to wait as long as the freeze lasted (12 s for a 12 s freeze). Now:
 * - a call on a connected client settles within `commandTimeoutMs` (asserted with room: under 3×)
 *   with QueueflowError REDIS_TIMEOUT naming the server (without its password) and the time, the
 *   BullMQ call a start makes (adding the run's first step) included; once Redis answers again
 *   (SIGCONT), the same engine works;
 * - a worker does not give up (BullMQ's behaviour): it reports once, through `onError`, that Redis
 *   does not answer its PING, and once, through `onLog`, that it answers again, then runs steps.
 *
 * The times measured are printed (the closing note of the issue asks for them).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { RedisEngine, RedisRunStore, startWorker, type QueueflowWorker } from '@queueflow/worker';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';

type S = { done?: boolean };
class Done extends Node<S> {
  override post(shared: S): void {
    shared.done = true;
  }
}
const quick = defineFlow('frozen-quick', () => new Flow(new Done({ name: 'done' })));

/** Settles `call`; returns what it rejected with (or resolved to) and how long it took, in ms. */
async function timed(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await call().then(
    (value) => ({ resolved: value }),
    (reason: unknown) => reason,
  );
  return { error, ms: Math.round(performance.now() - started) };
}

describe('Redis frozen by SIGSTOP', () => {
  let server: LocalRedisServer;
  const prefix = testPrefix('frozen');
  const opened: { close(): Promise<void> }[] = [];
  let frozen = false;

  beforeAll(async () => {
    server = await startRedisServer({ aclUser: { name: 'app', password: 'secret' } });
  });
  afterEach(async () => {
    if (frozen) server.signal('SIGCONT');
    frozen = false;
    vi.restoreAllMocks();
    for (const closing of opened.splice(0).reverse()) await closing.close();
  });
  afterAll(async () => {
    await server?.stop();
  });

  function freeze(): void {
    server.signal('SIGSTOP');
    frozen = true;
  }
  function thaw(): void {
    server.signal('SIGCONT');
    frozen = false;
  }
  function engineOf(commandTimeoutMs?: number): RedisEngine {
    const engine = new RedisEngine({
      connection: server.url,
      flows: [quick],
      prefix,
      ...(commandTimeoutMs === undefined ? {} : { commandTimeoutMs }),
    });
    opened.push(engine);
    return engine;
  }
  /** REDIS_TIMEOUT naming the server without its password, and the time. */
  function redisTimeout(ms: number): object {
    return {
      code: 'REDIS_TIMEOUT',
      message: `Redis at redis://app@127.0.0.1:${server.port} did not answer within ${ms} ms (commandTimeoutMs); what the call asked may still happen once Redis answers`,
    };
  }

  it('engine calls fail with REDIS_TIMEOUT within commandTimeoutMs; the same engine works once Redis answers; the worker logs one line each way', async () => {
    const errors: Error[] = [];
    const logs: string[] = [];
    const worker: QueueflowWorker = await startWorker({
      connection: server.url,
      flows: [quick],
      prefix,
      pingTimeoutMs: 500,
      onError: (error) => errors.push(error),
      onLog: (line) => logs.push(line),
    });
    opened.push(worker);
    const engine = engineOf(1000);
    const before = await engine.run(quick, {});
    expect(before.status).toBe('completed');

    freeze();
    const get = await timed(() => engine.get(before.id));
    const start = await timed(() => engine.start(quick, {}));
    const list = await timed(() => engine.list());
    // The worker notices that Redis does not answer its PING, and says so once.
    await waitFor('the worker to report that Redis does not answer', () => errors.length > 0);
    const stoppedAnswering = new RegExp(
      `^Redis at redis://app@127\\.0\\.0\\.1:${server.port} has not answered a PING for 500 ms; the worker waits for it`,
    );
    expect(errors).toEqual([
      expect.objectContaining({ code: 'REDIS_TIMEOUT', message: expect.stringMatching(stoppedAnswering) }),
    ]);
    thaw();

    console.log(
      `while Redis is frozen, with commandTimeoutMs 1000: get failed after ${get.ms} ms, start after ${start.ms} ms, list after ${list.ms} ms`,
    );
    for (const call of [get, start, list]) {
      expect(call.error).toMatchObject(redisTimeout(1000));
      expect(call.ms).toBeGreaterThanOrEqual(950);
      expect(call.ms).toBeLessThan(3000);
    }
    expect(String((get.error as Error).message)).not.toContain('secret');

    // The same engine works again, and so does the worker.
    expect(await engine.get(before.id)).toMatchObject({ status: 'completed' });
    const after = await engine.run(quick, {});
    expect(after.status).toBe('completed');
    await waitFor('the worker to log that Redis answers again', () =>
      logs.some((line) => line.includes('answers again')),
    );
    expect(logs.filter((line) => line.startsWith('Redis at'))).toEqual([
      expect.stringMatching(
        new RegExp(`^Redis at redis://app@127\\.0\\.0\\.1:${server.port} answers again after \\d+(\\.\\d)? s$`),
      ),
    ]);
    expect(errors).toHaveLength(1);
  });

  it('the BullMQ call of a start (adding its first step) times out the same way', async () => {
    const engine = engineOf(1000);
    await engine.list(); // connected
    // Freeze Redis right after the run's record is written: what hangs is BullMQ's add of the first step.
    const create = RedisRunStore.prototype.create;
    vi.spyOn(RedisRunStore.prototype, 'create').mockImplementation(async function (this: RedisRunStore, run) {
      const created = await create.call(this, run);
      freeze();
      return created;
    });
    const start = await timed(() => engine.start(quick, {}));
    thaw();
    console.log(`a start whose BullMQ add hung failed after ${start.ms} ms (commandTimeoutMs 1000)`);
    expect(start.error).toMatchObject(redisTimeout(1000));
    expect(start.ms).toBeLessThan(3000);
    vi.restoreAllMocks();
    expect(await engine.list()).toBeInstanceOf(Array);
  });

  it('with the default commandTimeoutMs (5000), a get fails after about 5 s', async () => {
    const engine = engineOf();
    await engine.list();
    freeze();
    const get = await timed(() => engine.get('any-run'));
    thaw();
    console.log(`while Redis is frozen, with the default commandTimeoutMs: get failed after ${get.ms} ms`);
    expect(get.error).toMatchObject(redisTimeout(5000));
    expect(get.ms).toBeGreaterThanOrEqual(4950);
    expect(get.ms).toBeLessThan(15_000);
  });

  it('a new engine whose first call meets a frozen Redis fails the same way, and connects once it answers', async () => {
    freeze();
    const engine = engineOf(1000);
    const get = await timed(() => engine.get('any-run'));
    thaw();
    console.log(`a first call (connecting) to a frozen Redis failed after ${get.ms} ms (commandTimeoutMs 1000)`);
    expect(get.error).toMatchObject(redisTimeout(1000));
    expect(get.ms).toBeLessThan(3000);
    expect(await engine.get('any-run')).toBeUndefined();
  });

  it('refuses a commandTimeoutMs that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Infinity, '100']) {
      expect(() => new RedisEngine({ flows: [quick], prefix, commandTimeoutMs: bad as unknown as number })).toThrow(
        /^RedisEngine: expected `commandTimeoutMs` to be an integer number of milliseconds from 1 and up, got/,
      );
    }
  });
});
