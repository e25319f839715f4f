import { Cluster } from 'ioredis';
import { QueueflowError } from '@queueflow/runtime';
import { warn } from '@queueflow/runtime/kernel';
import {
  COMMAND_TIMED_OUT,
  connectAll,
  createRedis,
  serverOf,
  unavailable,
  type ConnectionOption,
  type RedisConnection,
} from './connection.js';

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
 * check, which would run INFO first), closed before it returns; on a cluster, every master
 * (the policy reported is one that is not `noeviction`, if any). A server that refuses (NOPERM, a
 * renamed command) is a server whose INFO is forbidden, not an error.
 *
 * @param commandTimeoutMs - longest wait for the answer, in ms. @defaultValue no limit
 * @throws QueueflowError `REDIS_UNAVAILABLE` as {@link connectAll} does; `REDIS_TIMEOUT` when the
 *   server does not answer within `commandTimeoutMs`; `INVALID_OPTION` when the server has no
 *   database of the connection's number, or is a node of a Redis Cluster given as one server.
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
    await checkDatabase(redis, () => lastError);
  } catch (error) {
    redis.disconnect();
    throw error;
  }
  let clusterNode: boolean;
  try {
    // A node of a Redis Cluster given as one server answers MOVED for most keys: say so now.
    clusterNode = !(redis instanceof Cluster) && /^cluster_enabled:1/m.test(await redis.info('cluster'));
    // On a cluster, every master is asked: one that may evict is enough to lose keys.
    const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
    const policies = await Promise.all(
      servers.map(async (server) => /^maxmemory_policy:(\S+)/m.exec(await server.info('memory'))?.[1]),
    );
    if (!clusterNode)
      return { info: true, maxmemoryPolicy: policies.find((policy) => policy !== 'noeviction') ?? policies[0] };
  } catch (error) {
    const { message } = error as Error;
    // INFO forbidden to this user, or renamed away: not a connection that failed.
    if (message.startsWith('NOPERM') || /unknown command/i.test(message)) return { info: false, reason: message };
    // Without the ready check, a refused AUTH (WRONGPASS, NOAUTH) shows here, not in connect.
    throw unavailable(redis, message === COMMAND_TIMED_OUT ? (error as Error) : (lastError ?? (error as Error)));
  } finally {
    redis.disconnect();
  }
  throw clusterNodeError(serverOf(redis));
}

/**
 * The error for a single-server connection to a node of a Redis Cluster (found by INFO, or by the
 * `MOVED` it answers: `isMovedError`).
 */
function clusterNodeError(server: string, cause?: unknown): QueueflowError {
  return new QueueflowError(
    'INVALID_OPTION',
    `Redis at ${server} is a Redis Cluster node: use --cluster ${server.includes('://') ? server : `redis://${server}`} (QUEUEFLOW_CLUSTER; in code, connection { cluster: [urls] }) instead of --redis`,
    { retryable: false, ...(cause === undefined ? {} : { cause }) },
  );
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

/**
 * ioredis SELECTs the connection's database (`db`, or the URL's path) as it connects and, should
 * the server refuse (`ERR DB index is out of range`), only emits the error and goes on in
 * database 0: every key would then land there. Selecting it again on `redis`, connected, makes
 * that refusal an error. A cluster has database 0 only (a URL naming another is refused before).
 *
 * @param lastError - the connection's last error event: without a ready check, a refused
 *   password first shows as this command's failure, and the event says why.
 * @throws QueueflowError `INVALID_OPTION` naming the database the server does not have;
 *   `REDIS_UNAVAILABLE` (or `REDIS_TIMEOUT`) when SELECT fails otherwise.
 */
export async function checkDatabase(
  redis: RedisConnection,
  lastError: () => Error | undefined = () => undefined,
): Promise<void> {
  const db = redis instanceof Cluster ? 0 : (redis.options.db ?? 0);
  if (db === 0) return;
  try {
    await redis.select(db);
  } catch (error) {
    const { message } = error as Error;
    if (!/DB index is out of range/i.test(message)) throw unavailable(redis, lastError() ?? (error as Error));
    throw new QueueflowError(
      'INVALID_OPTION',
      `Redis at ${serverOf(redis)} has no database ${db} (the connection's \`db\`, or its URL's path): ${message}`,
      { retryable: false, cause: error },
    );
  }
}
