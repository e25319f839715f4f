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
 * - `reader`: blocking stream reads (XREAD BLOCK) for every follower of an engine; reconnects.
 *
 * @see https://docs.bullmq.io/guide/going-to-production
 */
export type ConnectionRole = 'client' | 'worker' | 'subscriber' | 'reader';

/** How a connection is made, beyond its role. */
export interface ConnectionSettings {
  /**
   * ioredis's ready check: on each (re)connect, wait until Redis has loaded its data (it runs
   * INFO). Off for a user whom INFO is forbidden: ioredis would warn on every connection and
   * skip it anyway. @defaultValue true
   */
  readyCheck?: boolean;
  /**
   * Longest a command may wait for its answer, in ms (ioredis `commandTimeout`); it then fails,
   * which {@link redisTimeoutOf} turns into `REDIS_TIMEOUT`. @defaultValue no limit
   */
  commandTimeoutMs?: number;
}

function redisOptionsOf(
  connection: ConnectionOption | undefined,
  role: ConnectionRole,
  settings: ConnectionSettings,
): RedisOptions & { url?: string } {
  // Named, so `CLIENT LIST` shows which connections are queueflow's and what for.
  const connectionName = `queueflow:${role}`;
  const common: RedisOptions = {
    lazyConnect: true,
    connectionName,
    enableReadyCheck: settings.readyCheck ?? true,
    ...(settings.commandTimeoutMs === undefined ? {} : { commandTimeout: settings.commandTimeoutMs }),
  };
  const roleOptions: RedisOptions =
    role === 'client'
      ? { ...common, maxRetriesPerRequest: 3, enableOfflineQueue: false }
      : { ...common, maxRetriesPerRequest: null };
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
  settings: ConnectionSettings = {},
): Redis {
  const { url, ...options } = redisOptionsOf(connection, role, settings);
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
    throw unavailable(redis, lastError ?? (error as Error));
  } finally {
    redis.off('error', remember);
  }
}

/**
 * QueueflowError `REDIS_UNAVAILABLE` naming the server of `redis` (never its password) and
 * `cause`; `REDIS_TIMEOUT` when the cause is a command that timed out (a server that accepts
 * connections but does not answer).
 */
function unavailable(redis: Redis, cause: Error): QueueflowError {
  const timeout = redisTimeoutOf(cause, serverOf(redis), redis.options.commandTimeout);
  if (timeout !== cause) return timeout as QueueflowError;
  return new QueueflowError('REDIS_UNAVAILABLE', `cannot connect to Redis at ${serverOf(redis)}: ${cause.message}`, {
    cause,
  });
}

/** The message of ioredis's error for a command unanswered after its `commandTimeout`. */
const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * The one place where ioredis's command timeout becomes QueueflowError `REDIS_TIMEOUT`, naming
 * the server (never its password) and the time; any other error is returned as it is.
 *
 * @param server - where Redis is, as {@link serverOf} names it.
 * @param timeoutMs - the `commandTimeout` the command had, in ms.
 */
export function redisTimeoutOf(error: unknown, server: string, timeoutMs: number | undefined): unknown {
  if (!(error instanceof Error) || error.message !== COMMAND_TIMED_OUT) return error;
  return new QueueflowError(
    'REDIS_TIMEOUT',
    `Redis at ${server} did not answer within ${timeoutMs} ms (commandTimeoutMs); what the call asked may still happen once Redis answers`,
    { cause: error },
  );
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
export function serverOf(redis: Redis): string {
  const { host, port, path, username, db, tls } = redis.options;
  if (path) return `unix://${path}`;
  const user = username ? `${encodeURIComponent(username)}@` : '';
  return `${tls ? 'rediss' : 'redis'}://${user}${host}:${port}${db ? `/${db}` : ''}`;
}

/**
 * What a client or worker learns of the server before it opens its connections: whether this
 * user may run INFO (ioredis's ready check, BullMQ's version check and the `maxmemory-policy`
 * check need it; a least-privilege user, e.g. `+@all -@dangerous`, may not), and if so the
 * `maxmemory-policy`.
 */
export type ServerInfo =
  | { info: true; maxmemoryPolicy: string | undefined }
  | {
      info: false;
      /** Why INFO failed, e.g. `NOPERM this user has no permissions to run the 'info' command`. */ reason: string;
    };

/**
 * Asks the server `INFO memory` over a short-lived connection of its own (without the ready
 * check, which would run INFO first), closed before it returns. A server that refuses (NOPERM, a
 * renamed command) is a server whose INFO is forbidden, not an error.
 *
 * @param commandTimeoutMs - longest wait for the answer, in ms. @defaultValue no limit
 * @throws QueueflowError `REDIS_UNAVAILABLE` as {@link connectAll} does; `REDIS_TIMEOUT` when the
 *   server does not answer within `commandTimeoutMs`.
 */
export async function probeServer(
  connection: ConnectionOption | undefined,
  commandTimeoutMs?: number,
): Promise<ServerInfo> {
  let lastError: Error | undefined;
  const redis = createRedis(connection, 'client', (error) => (lastError = error), {
    readyCheck: false,
    ...(commandTimeoutMs === undefined ? {} : { commandTimeoutMs }),
  });
  await connectAll([redis]);
  try {
    const info = await redis.info('memory');
    return { info: true, maxmemoryPolicy: /^maxmemory_policy:(\S+)/m.exec(info)?.[1] };
  } catch (error) {
    const { message } = error as Error;
    // INFO forbidden to this user, or renamed away: not a connection that failed.
    if (message.startsWith('NOPERM') || /unknown command/i.test(message)) return { info: false, reason: message };
    // Without the ready check, a refused AUTH (WRONGPASS, NOAUTH) shows here, not in connect.
    throw unavailable(redis, message === COMMAND_TIMED_OUT ? (error as Error) : (lastError ?? (error as Error)));
  } finally {
    redis.disconnect();
  }
}

/**
 * Warns (code `QF_REDIS_CONFIG`) when Redis may evict keys: under any `maxmemory-policy` but
 * `noeviction`, Redis can drop locks and jobs (BullMQ's production guide); and, when this user
 * may not read the policy (INFO is forbidden), that it could not be checked.
 */
export function checkRedisConfig(server: ServerInfo): void {
  if (!server.info) {
    warn(
      'QF_REDIS_CONFIG',
      `could not read maxmemory-policy: ${server.reason}; make sure it is 'noeviction' (see infra/redis.conf): an evicting Redis loses run records and jobs.`,
    );
    return;
  }
  const policy = server.maxmemoryPolicy;
  if (policy && policy !== 'noeviction') {
    warn(
      'QF_REDIS_CONFIG',
      `Redis maxmemory-policy is '${policy}': Redis may evict run records and jobs. Set it to 'noeviction' (see infra/redis.conf).`,
    );
  }
}
