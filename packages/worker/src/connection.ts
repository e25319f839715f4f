import { Redis, type RedisOptions } from 'ioredis';
import { QueueflowError } from '@queueflow/runtime';
import { warn } from '@queueflow/runtime/kernel';

/**
 * Where Redis is: a URL (`redis://`, `rediss://` for TLS, `redis://user:password@host:port/db`
 * for ACL users) or ioredis options. Unset means `REDIS_URL`, else `redis://127.0.0.1:6379`.
 */
export type ConnectionOption = string | RedisOptions;

/**
 * - `client`: a producer's connection (engine clients). Fails fast while Redis is unreachable
 *   (`enableOfflineQueue: false`), as BullMQ's production guide advises for producers.
 * - `worker`: waits and reconnects forever (`maxRetriesPerRequest: null`), as BullMQ requires
 *   of worker connections.
 * - `subscriber`: pub/sub; reconnects and resubscribes.
 *
 * @see https://docs.bullmq.io/guide/going-to-production
 */
export type ConnectionRole = 'client' | 'worker' | 'subscriber';

function redisOptionsOf(
  connection: ConnectionOption | undefined,
  role: ConnectionRole,
): RedisOptions & { url?: string } {
  // Named, so `CLIENT LIST` shows which connections are queueflow's and what for.
  const connectionName = `queueflow:${role}`;
  const roleOptions: RedisOptions =
    role === 'client'
      ? { maxRetriesPerRequest: 3, enableOfflineQueue: false, lazyConnect: true, connectionName }
      : { maxRetriesPerRequest: null, lazyConnect: true, connectionName };
  const source = connection ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (typeof source === 'string') {
    let url: URL;
    try {
      url = new URL(source);
    } catch {
      throw new TypeError(
        `expected \`connection\` (or REDIS_URL) to be a redis:// or rediss:// URL, got \`${source}\``,
      );
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new TypeError(
        `expected \`connection\` (or REDIS_URL) to use redis:// or rediss://, got \`${url.protocol}\``,
      );
    }
    return { ...roleOptions, url: source };
  }
  return { ...(source as RedisOptions), ...roleOptions };
}

/** A new ioredis connection for `role`; connects on first use. Always has an `error` listener. */
export function createRedis(
  connection: ConnectionOption | undefined,
  role: ConnectionRole,
  onError: (error: Error) => void = () => {},
): Redis {
  const { url, ...options } = redisOptionsOf(connection, role);
  const redis = url ? new Redis(url, options) : new Redis(options);
  redis.on('error', onError);
  return redis;
}

/**
 * Connects `redis` if it is not connected yet.
 *
 * @throws QueueflowError `REDIS_UNAVAILABLE` naming the server (never its password) and the last
 *   error ioredis reported, e.g. `connect ECONNREFUSED 127.0.0.1:6379` or `WRONGPASS ...`.
 */
async function connect(redis: Redis): Promise<void> {
  let lastError: Error | undefined;
  const remember = (error: Error): void => {
    lastError = error;
  };
  redis.on('error', remember);
  try {
    if (redis.status === 'wait') await redis.connect();
    else if (redis.status !== 'ready') {
      await new Promise<void>((resolve, reject) => {
        const onReady = (): void => {
          redis.off('end', onEnd);
          resolve();
        };
        const onEnd = (): void => {
          redis.off('ready', onReady);
          reject(new Error('Redis connection ended before it was ready'));
        };
        redis.once('ready', onReady);
        redis.once('end', onEnd);
      });
    }
  } catch (error) {
    const cause = lastError ?? (error as Error);
    throw new QueueflowError('REDIS_UNAVAILABLE', `cannot connect to Redis at ${serverOf(redis)}: ${cause.message}`, {
      cause,
    });
  } finally {
    redis.off('error', remember);
  }
}

/**
 * Connects every one of `connections`; should one fail, disconnects them all (so none keeps
 * retrying behind the caller) and throws as {@link connect} does.
 */
export async function connectAll(connections: Redis[]): Promise<void> {
  try {
    await Promise.all(connections.map(connect));
  } catch (error) {
    for (const redis of connections) redis.disconnect();
    throw error;
  }
}

/** Where `redis` connects, as a URL without the password. */
function serverOf(redis: Redis): string {
  const { host, port, path, username, db, tls } = redis.options;
  if (path) return `unix://${path}`;
  const user = username ? `${encodeURIComponent(username)}@` : '';
  return `${tls ? 'rediss' : 'redis'}://${user}${host}:${port}${db ? `/${db}` : ''}`;
}

/**
 * Warns (code `QF_REDIS_CONFIG`) when Redis may evict keys: under any `maxmemory-policy` but
 * `noeviction`, Redis can drop locks and jobs (BullMQ's production guide). Servers that forbid
 * `CONFIG GET` (managed services) are not checked.
 */
export async function checkRedisConfig(redis: Redis): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy && policy !== 'noeviction') {
      warn(
        'QF_REDIS_CONFIG',
        `Redis maxmemory-policy is '${policy}': Redis may evict run records and jobs. Set it to 'noeviction' (see infra/redis.conf).`,
      );
    }
  } catch {
    // CONFIG is disabled on this server: nothing to check.
  }
}
