/**
 * Issue 18, item 1, on the suite's 3-master Redis Cluster: a `{ cluster }` connection reaches the
 * cluster with every connection an engine and a worker open (commands, events, blocking stream
 * reads, BullMQ's), the CLI's `--cluster` does too, and a cluster nobody answers at is reported
 * with `REDIS_UNAVAILABLE` naming its nodes. (The conformance and parity suites run on the cluster
 * as well: tests/conformance, tests/store-conformance, tests/parity.)
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { QueueflowError, defineFlow, Flow, Node, type RunInfo, type StreamEntry } from '@queueflow/runtime';
import { Cluster } from 'ioredis';
import { RedisEngine, StreamReader, startWorker } from '@queueflow/worker';
import { startScript } from '../support/cli-process.js';
import { gate, type Gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { masters } from '../support/redis-prefix.js';
import { redisClusterUrls } from '../support/test-redis.js';
import { waitFor, within } from '../support/wait-for.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));
const NOWHERE = { cluster: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2'] };

type S = { token: string };

/** Per run token: the gate the talker waits on before it speaks. */
const gates = new Map<string, Gate>();

class Talker extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    await gates.get(token)?.promise;
    this.emit(`hello from ${token}`);
  }
}
const talk = defineFlow('cluster-talk', () => new Flow(new Talker({ name: 'talker' })));

/** The CLIENT LIST lines, on every master, of the connections blocked in a command (`flags=b`). */
async function blockedReads(cluster: Cluster): Promise<string[]> {
  const lists = await Promise.all((await masters(cluster)).map((node) => node.client('LIST') as Promise<string>));
  return lists
    .flatMap((list) => list.split('\n'))
    .filter((line) => /\bflags=\S*b/.test(line) && /cmd=xread/.test(line));
}

async function collect(iterable: AsyncIterable<StreamEntry>): Promise<unknown[]> {
  const data: unknown[] = [];
  for await (const entry of iterable) data.push(entry.data);
  return data;
}

describe('a { cluster } connection', () => {
  const setup = useRedisHarness();

  it('follows two runs at once', async () => {
    const { engine } = await setup('cluster-streams', { flows: [talk], cluster: true });
    const [a, b] = [gate(), gate()];
    gates.set('a', a).set('b', b);
    const first = await engine.start(talk, { token: 'a' });
    const second = await engine.start(talk, { token: 'b' });
    const followA = collect(engine.stream(first.id));
    // Once A's follower waits in XREAD BLOCK, B's follower must interrupt it to be read too.
    await waitFor('the first run to be in exec', async () => (await engine.get(first.id))?.status === 'running');
    const followB = collect(engine.stream(second.id));
    b.open();
    expect(await within(followB, 20_000, "the second run's stream did not end")).toEqual(['hello from b']);
    a.open();
    expect(await within(followA, 20_000, "the first run's stream did not end")).toEqual(['hello from a']);
    gates.clear();
  });

  it("interrupts its blocked stream read for a new follower: CLIENT UNBLOCK reaches the streams' master", async () => {
    const { connection, keys, prefix } = await setup('cluster-unblock', { flows: [talk], cluster: true });
    // Named, so that CLIENT LIST tells its blocked read from those of other tests on the cluster.
    const name = `unblock-${prefix.slice(1, -1)}`;
    const reader = new StreamReader(() => {
      const blocking = new Cluster(redisClusterUrls(), { redisOptions: { connectionName: name } });
      blocking.on('error', () => {});
      return blocking;
    }, connection);
    try {
      const [a, b] = [keys.stream('a'), keys.stream('b')];
      const first = reader.read(a, '0-0', 120_000);
      await waitFor('the XREAD on the first stream to block', async () =>
        (await blockedReads(connection as Cluster)).some((client) => client.includes(` name=${name} `)),
      );
      const second = reader.read(b, '0-0', 120_000);
      const id = await connection.xadd(b, '*', 'd', '"b"');
      // The XREAD in flight blocks for 30 s on the first stream only: the entry arrives this soon
      // only if the read was interrupted and issued again with both streams.
      expect(await within(second, 20_000, 'the blocked read was not interrupted')).toEqual([[id, ['d', '"b"']]]);
      await connection.xadd(a, '*', 'd', '"a"');
      expect(await within(first, 20_000, 'the first stream was not read')).toHaveLength(1);
    } finally {
      await reader.close();
    }
  });

  it('lets the CLI (--cluster) read a run and purge the prefix on every master', async () => {
    const { engine, prefix, scanKeys, worker } = await setup('cluster-cli', {
      flows: [talk],
      cluster: true,
      workers: 0,
    });
    const running = await worker();
    const result = await engine.run(talk, { token: 'cli' });
    expect(result.status).toBe('completed');
    await running.close(); // its heartbeats would write under the prefix again after the purge
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
    delete env.REDIS_URL;
    const at = ['--cluster', redisClusterUrls().join(','), '--prefix', prefix];
    const status = await startScript(CLI, ['status', result.id, ...at], { env, timeoutMs: 60_000 }).exited;
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout) as RunInfo).toMatchObject({ id: result.id, status: 'completed' });

    expect((await scanKeys()).length).toBeGreaterThan(0);
    const purged = await startScript(CLI, ['purge', '--yes', ...at], { env, timeoutMs: 60_000 }).exited;
    expect(purged.code, purged.stderr).toBe(0);
    expect(await scanKeys()).toEqual([]);
  });

  it('a cluster node given as --redis (or as one server) is named a cluster node, not a raw MOVED', async () => {
    const node = redisClusterUrls()[0]!;
    const engine = new RedisEngine({ connection: node, flows: [talk] });
    try {
      await expect(engine.list()).rejects.toMatchObject({
        code: 'INVALID_OPTION',
        message: expect.stringMatching(
          /^Redis at redis:\/\/.* is a Redis Cluster node: use --cluster redis:\/\//,
        ) as unknown,
      });
    } finally {
      await engine.close();
    }
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
    const listed = await startScript(CLI, ['list', '--redis', node], { env, timeoutMs: 60_000 }).exited;
    expect(listed.code).toBe(1);
    expect(listed.stderr).toMatch(/is a Redis Cluster node: use --cluster /);
    expect(listed.stderr).not.toMatch(/MOVED/);
  });

  it('is reported unavailable, naming the nodes, when no node answers', async () => {
    const engine = new RedisEngine({ connection: NOWHERE, flows: [talk] });
    try {
      const error = await engine.list().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(QueueflowError);
      expect(error).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
      expect((error as Error).message).toMatch(
        /^cannot connect to Redis at cluster redis:\/\/127\.0\.0\.1:1,redis:\/\/127\.0\.0\.1:2: /,
      );
    } finally {
      await engine.close();
    }
    await expect(startWorker({ connection: NOWHERE, flows: [talk], exitOnUnreachable: true })).rejects.toMatchObject({
      code: 'REDIS_UNAVAILABLE',
    });
  });
});
