import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A `redis-server` process started by a test, on a free port, in its own temp directory. */
export interface LocalRedisServer {
  url: string;
  port: number;
  /** Data directory (AOF files live here). */
  dir: string;
  /** Stops the server the hard way (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (AOF is replayed). */
  restart(): Promise<void>;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
  /** Sends `signal` to the server process (SIGSTOP freezes it: connections stay open, nothing answers; SIGCONT resumes it). */
  signal(signal: NodeJS.Signals): void;
}

export interface RedisServerOptions {
  /** Turn AOF on with `appendfsync always` (nothing acknowledged is lost on a crash). */
  appendOnly?: boolean;
  /**
   * Require this ACL user and turn the `default` user off; `url` then carries the credentials
   * (`redis://user:password@…`). `rules` are its ACL rules (keys, channels, commands).
   * @defaultValue rules `['~*', '&*', '+@all']`: every key, channel and command
   */
  aclUser?: { name: string; password: string; rules?: string[] };
  /** More ACL users (`--user <name> on ><password> <rules...>`), each with its own rules. */
  moreUsers?: { name: string; password: string; rules: string[] }[];
  /**
   * Serve TLS only, with this certificate and key (PEM files), clients not asked for one; `url`
   * is then `rediss://…`, trusted by clients that trust `caFile`.
   */
  tls?: { certFile: string; keyFile: string; caFile: string };
  /** Listen on this port (a test that started a client before its server). @defaultValue a free port */
  port?: number;
  /** Start as a cluster node (`--cluster-enabled yes`), holding no slot until given some. */
  clusterEnabled?: boolean;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Starts `redis-server` on a free port with no persistence (or AOF `always`). */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<LocalRedisServer> {
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'queueflow-redis-'));
  const { aclUser } = options;
  const credentials = aclUser ? `${encodeURIComponent(aclUser.name)}:${encodeURIComponent(aclUser.password)}@` : '';
  const { tls } = options;
  const url = `${tls ? 'rediss' : 'redis'}://${credentials}127.0.0.1:${port}`;
  const listen = tls
    ? [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--tls-cert-file',
        tls.certFile,
        '--tls-key-file',
        tls.keyFile,
        '--tls-ca-cert-file',
        tls.caFile,
        '--tls-auth-clients',
        'no',
      ]
    : ['--port', String(port)];
  const args = [...listen, '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--maxmemory-policy', 'noeviction'];
  if (options.clusterEnabled) args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'));
  if (options.appendOnly) args.push('--appendonly', 'yes', '--appendfsync', 'always');
  else args.push('--appendonly', 'no');
  if (aclUser) {
    const rules = aclUser.rules ?? ['~*', '&*', '+@all'];
    args.push('--user', 'default', 'off', '--user', aclUser.name, 'on', `>${aclUser.password}`, ...rules);
  }
  for (const user of options.moreUsers ?? []) args.push('--user', user.name, 'on', `>${user.password}`, ...user.rules);
  let child: ChildProcess | undefined;

  const launch = async (): Promise<void> => {
    const started = spawn('redis-server', args, { stdio: 'ignore' });
    started.once('error', () => {});
    // Should the test process end without stop() (a hook timed out), the server goes with it.
    const killOnExit = (): void => void started.kill('SIGKILL');
    process.once('exit', killOnExit);
    started.once('exit', () => process.off('exit', killOnExit));
    child = started;
    await waitUntilPing(url, tls ? { ca: readFileSync(tls.caFile) } : undefined);
  };
  const kill = async (): Promise<void> => {
    const current = child;
    if (!current || current.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      current.once('exit', () => resolve());
      current.kill('SIGKILL');
    });
  };
  await launch();
  return {
    url,
    port,
    dir,
    kill,
    restart: launch,
    stop: async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
    signal: (signal) => {
      if (!child?.kill(signal)) throw new Error(`could not send ${signal} to redis-server at ${url}`);
    },
  };
}

async function waitUntilPing(url: string, tls?: { ca: Buffer }): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const redis = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      ...(tls ? { tls } : {}),
    });
    redis.on('error', () => {});
    try {
      await redis.connect();
      await redis.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline)
        throw new Error(`redis-server at ${url} did not start: ${(error as Error).message}`, {
          cause: error,
        });
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      redis.disconnect();
    }
  }
}
