import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { EndingCluster } from './ending-cluster.js';
import { QueueflowError } from '@queueflow/runtime';
import { clusterNodesOf, isClusterConnection, type ClusterConnection } from './cluster-connection.js';

/**
 * Where Redis is: a URL (`redis://`, `rediss://` for TLS, `redis://user:password@host:port/db`
 * for ACL users), ioredis options, or a Redis Cluster (`{ cluster: [url, ...] }`, see
 * {@link ClusterConnection}). Unset means `REDIS_URL`, else `redis://127.0.0.1:6379`.
 */
export type ConnectionOption = string | RedisOptions | ClusterConnection;

/** A connection to one Redis server, or to a Redis Cluster (ioredis `Cluster`). */
export type RedisConnection = Redis | Cluster;

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

/** ioredis options for a connection of `role` (per node, on a cluster). */
function roleOptionsOf(role: ConnectionRole, settings: ConnectionSettings): RedisOptions {
  const common: RedisOptions = {
    lazyConnect: true,
    // Named, so `CLIENT LIST` shows which connections are queueflow's and what for.
    connectionName: `queueflow:${role}`,
    enableReadyCheck: settings.readyCheck ?? true,
    ...(settings.commandTimeoutMs === undefined ? {} : { commandTimeout: settings.commandTimeoutMs }),
  };
  return role === 'client'
    ? { ...common, maxRetriesPerRequest: 3, enableOfflineQueue: false }
    : { ...common, maxRetriesPerRequest: null };
}

/**
 * Where a connection given as `connection` goes: itself, else `REDIS_URL`, else the local default.
 * Read at the call: a heartbeat thread resolves it on the main thread (a thread keeps the
 * environment of when it started, which a later worker of the process may have changed).
 */
export function connectionSource<C>(connection: C | undefined): C | string {
  return connection ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

function redisOptionsOf(
  connection: string | RedisOptions | undefined,
  roleOptions: RedisOptions,
): RedisOptions & { url?: string } {
  const source = connectionSource(connection);
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
  return { ...source, ...roleOptions };
}

/**
 * How a worker's, a subscriber's and a reader's cluster connections wait out a failover: a
 * command answered `CLUSTERDOWN`, `TRYAGAIN` or `MOVED` while a replica takes over from a dead
 * master is sent again every half second for up to a minute (ioredis's default gives up after
 * 16 tries 100 ms apart, and a step's commit would fail the run). A failover takes about the
 * cluster's `cluster-node-timeout` and an election.
 */
const WAIT_OUT_FAILOVER = {
  retryDelayOnClusterDown: 500,
  retryDelayOnFailover: 500,
  retryDelayOnTryAgain: 500,
  maxRedirections: 120,
} as const;

/**
 * A new ioredis Cluster for `role`. Per node, the role's options (BullMQ's workers need
 * `maxRetriesPerRequest: null` there, in `redisOptions`); on the cluster, a client fails fast
 * while the cluster is not ready (`enableOfflineQueue: false`), other roles queue and wait, and
 * wait out a failover ({@link WAIT_OUT_FAILOVER}).
 */
function createCluster(connection: ClusterConnection, role: ConnectionRole, roleOptions: RedisOptions): Cluster {
  const { nodes, redisOptions, names } = clusterNodesOf(connection.cluster, 'connection.cluster');
  const { lazyConnect, enableReadyCheck, enableOfflineQueue, ...perNode } = roleOptions;
  const user = connection.options ?? {};
  const cluster = new EndingCluster(nodes, {
    ...user,
    lazyConnect: lazyConnect ?? true,
    enableReadyCheck: enableReadyCheck ?? true,
    enableOfflineQueue: enableOfflineQueue ?? true,
    ...(role === 'client' ? {} : WAIT_OUT_FAILOVER),
    redisOptions: { ...user.redisOptions, ...redisOptions, ...perNode },
  });
  clusterNames.set(cluster, names.join(','));
  return cluster;
}

/** The startup nodes of each cluster {@link createRedis} made, as {@link serverOf} names them. */
const clusterNames = new WeakMap<Cluster, string>();

/**
 * A new ioredis connection for `role` (a Cluster for a cluster connection); connects on first
 * use. Always has an `error` listener.
 *
 * @throws TypeError for an invalid connection option, naming it and what is wrong.
 */
export function createRedis(
  connection: ConnectionOption | undefined,
  role: ConnectionRole,
  onError: (error: Error) => void = () => {},
  settings: ConnectionSettings = {},
): RedisConnection {
  const roleOptions = roleOptionsOf(role, settings);
  if (isClusterConnection(connection)) {
    const cluster = createCluster(connection, role, roleOptions);
    cluster.on('error', onError);
    rememberErrors(cluster);
    return cluster;
  }
  const { url, ...options } = redisOptionsOf(connection, roleOptions);
  const redis = url ? new Redis(url, options) : new Redis(options);
  redis.on('error', onError);
  rememberErrors(redis);
  return redis;
}

/** The last error each connection {@link createRedis} made reported since it was last ready. */
const lastErrors = new WeakMap<RedisConnection, Error>();

function rememberErrors(redis: RedisConnection): void {
  redis.on('error', (error: Error) => lastErrors.set(redis, error));
  redis.on('ready', () => lastErrors.delete(redis));
}

/**
 * Why `redis` cannot reach its server now, as ioredis last reported it (e.g. `connect
 * ECONNREFUSED 127.0.0.1:6379`); `undefined` once it is ready again.
 */
export function lastErrorOf(redis: RedisConnection): Error | undefined {
  return lastErrors.get(redis);
}

/**
 * Connects `redis` if it is not connected yet.
 *
 * @throws QueueflowError `REDIS_UNAVAILABLE` naming the server (never its password) and the last
 *   error ioredis reported, e.g. `connect ECONNREFUSED 127.0.0.1:6379` or `WRONGPASS ...`.
 */
async function connect(redis: RedisConnection): Promise<void> {
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
export function unavailable(redis: RedisConnection, cause: Error): QueueflowError {
  const timeout = redisTimeoutOf(cause, serverOf(redis), commandTimeoutOf(redis));
  if (timeout !== cause) return timeout as QueueflowError;
  // A cluster that could not be reached says why its last node failed in `lastNodeError`.
  const { lastNodeError } = cause as Error & { lastNodeError?: Error };
  const reason = lastNodeError ? `${cause.message} (${lastNodeError.message})` : cause.message;
  return new QueueflowError('REDIS_UNAVAILABLE', `cannot connect to Redis at ${serverOf(redis)}: ${reason}`, {
    cause,
  });
}

/** The `commandTimeout` of `redis`'s commands (its nodes' on a cluster), in ms. */
function commandTimeoutOf(redis: RedisConnection): number | undefined {
  return redis instanceof Cluster ? redis.options.redisOptions?.commandTimeout : redis.options.commandTimeout;
}

/** The message of ioredis's error for a command unanswered after its `commandTimeout`. */
export const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * The one place where ioredis's command timeout becomes QueueflowError `REDIS_TIMEOUT`, naming
 * the server (never its password) and the time; any other error is returned as it is.
 *
 * @param server - where Redis is, as {@link serverOf} names it.
 * @param timeoutMs - the `commandTimeout` the command had, in ms.
 */
function redisTimeoutOf(error: unknown, server: string, timeoutMs: number | undefined): unknown {
  if (!(error instanceof Error) || error.message !== COMMAND_TIMED_OUT) return error;
  return new QueueflowError(
    'REDIS_TIMEOUT',
    `Redis at ${server} did not answer within ${timeoutMs} ms (commandTimeoutMs); what the call asked may still happen once Redis answers`,
    { cause: error },
  );
}

/**
 * Messages of the errors ioredis rejects a command with when it could not reach the server (as
 * opposed to what the server answered): a client's connection that is down (`enableOfflineQueue:
 * false`), a command whose connection closed under it and that ran out of tries.
 */
const CONNECTION_LOST = [
  "Stream isn't writeable and enableOfflineQueue options is false",
  "Cluster isn't ready and enableOfflineQueue options is false",
  'Connection is closed.',
  'None of startup nodes is available',
];

/** Error codes of a socket that could not reach or lost the server. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * The one place where what ioredis (or BullMQ, on the same connection) rejects a command with
 * becomes queueflow's vocabulary: a command unanswered after its `commandTimeout` becomes
 * QueueflowError `REDIS_TIMEOUT` (see {@link redisTimeoutOf}); a command refused because Redis
 * cannot be reached (`Stream isn't writeable and enableOfflineQueue options is false`, ioredis's
 * `MaxRetriesPerRequestError`, `Connection is closed.`, a socket error) becomes `REDIS_UNAVAILABLE`
 * with the message a client that could not connect at all gets: `cannot connect to Redis at
 * <server>: <why>`, `why` being the connection's last error (e.g. `connect ECONNREFUSED ...`)
 * when it reported one. Any other error (a server's reply, a QueueflowError) is returned as it is.
 *
 * @param server - where Redis is, as {@link serverOf} names it.
 * @param timeoutMs - the `commandTimeout` the command had, in ms.
 * @param lastError - the connection's last error ({@link lastErrorOf}), if known.
 */
export function redisErrorOf(
  error: unknown,
  server: string,
  timeoutMs: number | undefined,
  lastError?: Error,
): unknown {
  const timeout = redisTimeoutOf(error, server, timeoutMs);
  if (timeout !== error || !isConnectionLoss(error)) return timeout;
  return unreachable(server, (lastError ?? error).message, error);
}

/**
 * QueueflowError `REDIS_UNAVAILABLE` when a client's connection `redis` is down now (its commands
 * would be refused at once, and BullMQ's would wait for it), else `undefined`: a call checks
 * first, and fails fast, as {@link redisErrorOf} words it.
 *
 * @param server - where Redis is, as {@link serverOf} names it.
 */
export function unavailableNow(redis: RedisConnection, server: string): QueueflowError | undefined {
  if (redis.status === 'ready') return undefined;
  const lastError = lastErrorOf(redis);
  return unreachable(server, lastError?.message ?? `the connection is ${redis.status}`, lastError);
}

function unreachable(server: string, reason: string, cause: unknown): QueueflowError {
  return new QueueflowError('REDIS_UNAVAILABLE', `cannot connect to Redis at ${server}: ${reason}`, {
    ...(cause === undefined ? {} : { cause }),
  });
}

function isConnectionLoss(error: unknown): error is Error {
  if (!(error instanceof Error) || error instanceof QueueflowError) return false;
  if (error.name === 'MaxRetriesPerRequestError' || CONNECTION_LOST.includes(error.message)) return true;
  const { code } = error as Error & { code?: unknown };
  return typeof code === 'string' && SOCKET_CODES.has(code);
}

/**
 * Connects every one of `connections`; should one fail, disconnects them all (so none keeps
 * retrying behind the caller) and throws as {@link connect} does.
 */
export async function connectAll(connections: RedisConnection[]): Promise<void> {
  try {
    await Promise.all(connections.map(connect));
  } catch (error) {
    for (const redis of connections) redis.disconnect();
    throw error;
  }
}

/**
 * Where `redis` connects, as a URL without the password; for a cluster, `cluster ` and its
 * startup nodes' URLs, comma-separated.
 */
export function serverOf(redis: RedisConnection): string {
  if (redis instanceof Cluster) return `cluster ${clusterNames.get(redis) ?? '(startup nodes unknown)'}`;
  const { host, port, path, username, db, tls } = redis.options;
  if (path) return `unix://${path}`;
  const user = username ? `${encodeURIComponent(username)}@` : '';
  return `${tls ? 'rediss' : 'redis'}://${user}${host}:${port}${db ? `/${db}` : ''}`;
}
