/**
 * DESIGN "Redis": ACL users work. A redis-server whose `default` user is off and whose users need
 * a password: workers and clients given `redis://user:password@host:port` run flows with a fan-out
 * (child runs and items), a retried try, and mailbox messages (a send, an ask and its reply), and
 * use every read a client has (list, get, history, mailboxes, which SCANs, watch, which subscribes
 * to the changes channel, workers); a wrong password is refused with Redis's own reason.
 *
 * Besides a user allowed everything, two least-privilege users (issue 16, item 4), both limited to
 * the keys and channels under the prefix:
 * - the common `+@all -@dangerous`, which forbids INFO and CONFIG: the worker used to fail at
 *   start with `NOPERM ... 'info'`; it now warns QF_REDIS_CONFIG (it cannot read
 *   maxmemory-policy) and goes on;
 * - the minimal ACL the README documents, by command category.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  defineFlow,
  Flow,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  setWarningHandler,
  type JsonObject,
  type Message,
  type RunChange,
} from '@queueflow/runtime';
import { RedisEngine, startWorker } from '@queueflow/worker';
import { startRedisServer, type LocalRedisServer } from '../support/redis-server.js';
import { testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';

type S = { results: Record<string, number>; doubled?: number[]; tried?: number; reply?: JsonObject; answer?: unknown };

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
class Double extends ParallelBatchNode<S> {
  override prep(): number[] {
    return [1, 2];
  }
  override exec(item: number): number {
    return item * 2;
  }
  override post(shared: S, _items: unknown, doubled: number[]): undefined {
    shared.doubled = doubled;
    return undefined;
  }
}
/** Fails its first try (a retry through BullMQ's delayed set). */
class FailsOnce extends Node<S> {
  override exec(): number {
    if (this.currentRetry === 0) throw new Error('first try fails');
    return this.currentRetry;
  }
  override post(shared: S, _prep: unknown, tried: number): undefined {
    shared.tried = tried;
    return undefined;
  }
}
class AwaitReply extends Node<S> {
  override async exec(): Promise<Message | undefined> {
    return this.receive(this.params.inbox as string);
  }
  override post(shared: S, _prep: unknown, message: Message | undefined): undefined {
    shared.reply = message?.body as JsonObject;
    return undefined;
  }
}
/** Asks the desk (a run of `aclDesk`) and keeps the answer. */
class AskDesk extends Node<S> {
  override prep(): Promise<Message | undefined> {
    return this.ask(this.params.desk as string, 'ping', { timeoutMs: 30_000 });
  }
  override post(shared: S, answer: Message | undefined): undefined {
    shared.answer = answer?.body ?? null;
    return undefined;
  }
}
class Desk extends Node<S> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.desk as string);
  }
  override async post(_shared: S, question: Message | undefined): Promise<undefined> {
    await this.reply(question!, `pong to ${question!.body as string}`);
    return undefined;
  }
}
const everything = defineFlow('acl-everything', () => {
  const squares = new Squares(new Square({ name: 'square' }), { name: 'squares' });
  squares
    .next(new Double({ name: 'double' }))
    .next(new FailsOnce({ name: 'fails-once', maxRetries: 2, wait: 0.01 }))
    .next(new AskDesk({ name: 'ask-desk' }))
    .next(new AwaitReply({ name: 'await-reply' }));
  return new Flow(squares);
});
const aclDesk = defineFlow('acl-desk', () => new Flow(new Desk({ name: 'desk' })));
const flows = [everything, aclDesk];

const prefix = testPrefix('acl');
/** The least-privilege users: keys and channels under the prefix only. */
const users = {
  'no-dangerous': [`~${prefix}*`, `&${prefix}*`, '+@all', '-@dangerous'],
  // The minimal ACL of the README's "Production Redis" (its `{qf}` is this test's prefix).
  minimal: [
    `~${prefix}*`,
    `&${prefix}*`,
    '-@all',
    '+@read',
    '+@write',
    '+@scripting',
    '+@pubsub',
    '+@transaction',
    '+@connection',
    '+time',
    '-@dangerous',
  ],
};

function urlOf(server: LocalRedisServer, user: string): string {
  return `redis://${encodeURIComponent(user)}:p4ss@127.0.0.1:${server.port}`;
}

describe('Redis with ACL users', () => {
  let server: LocalRedisServer;
  const warnings: [string, string][] = [];
  let consoleWarn: ReturnType<typeof vi.spyOn>;

  beforeAll(async () => {
    server = await startRedisServer({
      aclUser: { name: 'queueflow-app', password: 's3cret pass' },
      moreUsers: Object.entries(users).map(([name, rules]) => ({ name, password: 'p4ss', rules })),
    });
  });
  afterAll(async () => {
    await server?.stop();
  });
  beforeEach(() => {
    warnings.length = 0;
    setWarningHandler((code, message) => warnings.push([code, message]));
    consoleWarn = vi.spyOn(console, 'warn');
  });
  afterEach(() => {
    setWarningHandler(null);
    consoleWarn.mockRestore();
  });

  /** Runs `everything` and a desk through a worker and a client at `url`; checks every read. */
  async function runEverything(url: string): Promise<void> {
    const worker = await startWorker({ connection: url, flows, prefix, concurrency: 4 });
    const engine = new RedisEngine({ connection: url, flows, prefix });
    const changes: RunChange[] = [];
    try {
      const stopWatching = await engine.watch((change) => changes.push(change));
      const tag = Math.random().toString(36).slice(2);
      const params = { inbox: `acl-inbox-${tag}`, desk: `acl-desk-${tag}` };
      const desk = await engine.start(aclDesk, { results: {} }, { params });
      const handle = await engine.start(everything, { results: {} }, { params });
      await waitFor('the run to wait for its reply', async () => {
        const info = await engine.get(handle.id);
        return info?.status === 'waiting' && info.currentNode === 'await-reply'; // parked on its inbox
      });
      expect((await engine.mailboxes()).map((mailbox) => mailbox.address)).toContain(params.inbox);
      await engine.send(params.inbox, { ok: true });
      const result = await handle.result();
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      expect(result.shared).toEqual({
        results: { n1: 1, n2: 4, n3: 9 },
        doubled: [2, 4],
        tried: 1,
        answer: 'pong to ping',
        reply: { ok: true },
      });
      expect((await desk.result()).status).toBe('completed');
      expect((await engine.list()).map((run) => run.id)).toEqual(expect.arrayContaining([handle.id, desk.id]));
      expect((await engine.history(handle.id)).length).toBeGreaterThan(0);
      expect((await engine.workers()).length).toBe(1);
      await waitFor('the change of the run to completed', () =>
        changes.some((change) => change.runId === handle.id && change.status === 'completed'),
      );
      stopWatching();
    } finally {
      await engine.close();
      await worker.close();
    }
  }

  it('runs a flow with a fan-out and mailbox messages through workers and a client given the user in the URL', async () => {
    expect(server.url).toMatch(/^redis:\/\/queueflow-app:s3cret%20pass@127\.0\.0\.1:\d+$/);
    await runEverything(server.url);
    expect(warnings).toEqual([]);
  });

  for (const user of Object.keys(users)) {
    it(`runs everything a client and a worker do as the least-privilege user '${user}'`, async () => {
      await runEverything(urlOf(server, user));
      // The worker cannot read maxmemory-policy: it says so once, and goes on.
      expect(warnings).toEqual([
        [
          'QF_REDIS_CONFIG',
          expect.stringMatching(
            /^could not read maxmemory-policy: NOPERM .*'info'.*; make sure it is 'noeviction' \(see infra\/redis\.conf\)/,
          ),
        ],
      ]);
      // Neither ioredis (its ready check runs INFO) nor BullMQ (its version check) complains.
      expect(consoleWarn).not.toHaveBeenCalled();
    });
  }

  it('refuses a wrong password with the reason Redis gives', async () => {
    const wrong = server.url.replace('s3cret%20pass', 'wrong');
    const engine = new RedisEngine({ connection: wrong, flows, prefix });
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
    // A worker waits for a Redis it cannot reach, not for a password Redis refuses.
    await expect(startWorker({ connection: wrong, flows, prefix, onError: () => {} })).rejects.toMatchObject({
      code: 'REDIS_UNAVAILABLE',
      message: expect.stringMatching(/: WRONGPASS/),
    });
  });
});
