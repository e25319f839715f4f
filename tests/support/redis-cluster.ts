/**
 * A local Redis Cluster for tests: `redis-server --cluster-enabled yes` processes on free loopback
 * ports, joined by `redis-cli --cluster create`, each in a temp directory of its own; no Docker.
 * Free of vitest, so benchmarks (run with tsx) use it too.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './redis-server.js';

const run = promisify(execFile);

/** One node of a {@link LocalRedisCluster}. */
interface ClusterNodeProcess {
  url: string;
  port: number;
  /** Stops the node the hard way (SIGKILL), as a crash would; its replica (if any) takes over. */
  kill(): Promise<void>;
}

/** A Redis Cluster started by a test run. */
export interface LocalRedisCluster {
  /** Every node's URL, masters first (the startup nodes to give a `{ cluster }` connection). */
  urls: string[];
  nodes: ClusterNodeProcess[];
  /** Stops every node and removes their directories. */
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  /** @defaultValue 3 */
  masters?: number;
  /** Replicas per master (`--cluster-replicas`). @defaultValue 0 */
  replicas?: number;
  /**
   * How long a node may be unreachable before the cluster counts it failed, in ms
   * (`cluster-node-timeout`): a replica takes over about this long after its master dies.
   * @defaultValue 2000
   */
  nodeTimeoutMs?: number;
}

/**
 * Starts `masters × (1 + replicas)` nodes (no persistence, `noeviction`), creates the cluster
 * (slots spread evenly over the masters; `redis-cli --cluster create` from 3 masters, by hand
 * below that, without replicas) and waits until every node says `cluster_state:ok`.
 *
 * @throws Error with redis-cli's output when the cluster cannot be created.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<LocalRedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 0;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2000;
  const dir = mkdtempSync(join(tmpdir(), 'queueflow-cluster-'));
  const children: ChildProcess[] = [];
  const killOnExit = (): void => {
    for (const child of children) child.kill('SIGKILL');
  };
  // Should the process end without stop() (a hook timed out), the nodes go with it.
  process.once('exit', killOnExit);
  const stop = async (): Promise<void> => {
    await Promise.all(children.map(killProcess));
    process.off('exit', killOnExit);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const nodes: ClusterNodeProcess[] = [];
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const [port, busPort] = [await freePort(), await freePort()];
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--cluster-port',
          String(busPort),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          // A lone node learns its own address only from another node: say it (1-master clusters).
          '--cluster-announce-ip',
          '127.0.0.1',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--maxmemory-policy',
          'noeviction',
        ],
        { stdio: 'ignore' },
      );
      child.once('error', () => {});
      children.push(child);
      nodes.push({ url: `redis://127.0.0.1:${port}`, port, kill: () => killProcess(child) });
    }
    await Promise.all(nodes.map(({ port }) => untilAnswers(port)));
    const addresses = nodes.map(({ port }) => `127.0.0.1:${port}`);
    if (masters < 3) {
      // redis-cli --cluster create wants 3 masters at least: fewer are joined by hand.
      if (replicas > 0) throw new Error('a cluster of fewer than 3 masters is made without replicas here');
      await joinByHand(nodes.map(({ port }) => port));
      await Promise.all(nodes.map(({ port }) => untilClusterOk(port, masters)));
      return { urls: nodes.map(({ url }) => url), nodes, stop };
    }
    try {
      // Masters are the first `masters` addresses given; each later one replicates one of them.
      await run('redis-cli', [
        '--cluster',
        'create',
        ...addresses,
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
    } catch (error) {
      const { stdout, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`redis-cli --cluster create failed: ${stderr || stdout || (error as Error).message}`, {
        cause: error,
      });
    }
    await Promise.all(nodes.map(({ port }) => untilClusterOk(port, masters * (1 + replicas))));
    return { urls: nodes.map(({ url }) => url), nodes, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Gives each master an even share of the 16384 slots and has them meet. */
async function joinByHand(ports: number[]): Promise<void> {
  const share = Math.ceil(16384 / ports.length);
  for (const [i, port] of ports.entries()) {
    const redis = new Redis(port, '127.0.0.1');
    try {
      await redis.cluster('ADDSLOTSRANGE', i * share, Math.min(16383, (i + 1) * share - 1));
      for (const other of ports.slice(i + 1)) await redis.cluster('MEET', '127.0.0.1', other);
    } finally {
      redis.disconnect();
    }
  }
}

function killProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Resolves once `check` on a connection to `port` resolves true; polls every 50 ms for 20 s. */
async function until(port: number, what: string, check: (redis: Redis) => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const redis = new Redis(port, '127.0.0.1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on('error', () => {});
    let last: unknown;
    try {
      await redis.connect();
      if (await check(redis)) return;
    } catch (error) {
      last = error;
    } finally {
      redis.disconnect();
    }
    if (Date.now() > deadline) {
      throw new Error(`cluster node 127.0.0.1:${port} did not ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function untilAnswers(port: number): Promise<void> {
  return until(port, 'start', async (redis) => (await redis.ping()) === 'PONG');
}

/** Until the node says the cluster is ok and knows all `nodes` nodes. */
function untilClusterOk(port: number, nodes: number): Promise<void> {
  return until(port, 'see the cluster ok', async (redis) => {
    const info = await redis.cluster('INFO');
    return /cluster_state:ok/.test(info) && new RegExp(`cluster_known_nodes:${nodes}\\b`).test(info);
  });
}
