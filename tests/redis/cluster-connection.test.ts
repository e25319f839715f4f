/**
 * Issue 18, item 1: `connection` also takes `{ cluster: [url, ...] }`, and the CLI `--cluster
 * URL,URL`. A bad value is refused before anything connects, with an error naming the value, the
 * entry and where it came from (the option, `--cluster`, or `QUEUEFLOW_CLUSTER`). Nothing here
 * needs Redis: the refusal comes first.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defineFlow, Node } from '@queueflow/runtime';
import { RedisEngine, startWorker, type ClusterConnection } from '@queueflow/worker';
import { startScript } from '../support/cli-process.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));
const flow = defineFlow('cluster-connection', () => new Node());

const refused: [string, unknown, string][] = [
  [
    'an empty list',
    [],
    'expected `connection.cluster` to be a non-empty array of redis:// or rediss:// URLs, got an empty array',
  ],
  [
    'a string, not a list',
    'redis://127.0.0.1:7000',
    'expected `connection.cluster` to be a non-empty array of redis:// or rediss:// URLs, got `redis://127.0.0.1:7000` (string)',
  ],
  [
    'a number in the list',
    ['redis://a:1', 7001],
    'expected `connection.cluster[1]` to be a URL string, got `7001` (number)',
  ],
  ['not a URL', ['localhost'], 'expected `connection.cluster[0]` to be a redis:// or rediss:// URL, got `localhost`'],
  ['another scheme', ['http://a:1'], 'expected `connection.cluster[0]` to use redis:// or rediss://, got `http:`'],
  [
    'a database',
    ['redis://a:1', 'redis://b:2/3'],
    'expected `connection.cluster[1]` to name no database (a Redis Cluster has only db 0), got `3`',
  ],
  [
    'other credentials',
    ['redis://u:p@a:1', 'redis://u:q@b:2'],
    'expected every URL of `connection.cluster` to use the same scheme and credentials as the first, but `connection.cluster[1]` differs',
  ],
  [
    'TLS on one node only',
    ['rediss://a:1', 'redis://b:2'],
    'expected every URL of `connection.cluster` to use the same scheme and credentials as the first, but `connection.cluster[1]` differs',
  ],
];

describe.each(refused)('a cluster connection with %s', (_what, cluster, message) => {
  const connection = { cluster } as ClusterConnection;

  it('is refused by the RedisEngine constructor with a TypeError naming the value', () => {
    expect(() => new RedisEngine({ connection, flows: [flow] })).toThrow(new TypeError(message));
  });

  it('is refused by startWorker before it connects', async () => {
    await expect(startWorker({ connection, flows: [flow] })).rejects.toThrow(new TypeError(message));
  });
});

describe('queueflow --cluster', () => {
  const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const all: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1', ...env };
    delete all.REDIS_URL;
    return startScript(CLI, args, { env: all, timeoutMs: 10_000 }).exited;
  };

  it('refuses a bad URL, naming the entry', async () => {
    const out = await cli(['list', '--cluster', 'redis://127.0.0.1:1, http://127.0.0.1:2']);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(
      "error: option '--cluster <urls>' argument 'redis://127.0.0.1:1, http://127.0.0.1:2' is invalid. expected `--cluster[1]` to use redis:// or rediss://, got `http:`",
    );
  });

  it('refuses a bad QUEUEFLOW_CLUSTER, naming the variable', async () => {
    const out = await cli(['list'], { QUEUEFLOW_CLUSTER: 'redis://a:1,redis://b:2/2' });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(
      "error: option '--cluster <urls>' value 'redis://a:1,redis://b:2/2' from env 'QUEUEFLOW_CLUSTER' is invalid. expected `--cluster[1]` to name no database (a Redis Cluster has only db 0), got `2`",
    );
  });

  it('refuses --redis and --cluster together', async () => {
    const out = await cli(['list', '--cluster', 'redis://127.0.0.1:1', '--redis', 'redis://127.0.0.1:1']);
    expect(out).toEqual({
      code: 1,
      stdout: '',
      stderr: 'queueflow: --redis and --cluster both say where Redis is: pass one of them\n',
    });
  });
});
