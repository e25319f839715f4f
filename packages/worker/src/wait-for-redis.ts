import { QueueflowError } from '@queueflow/runtime';
import {
  connectAll,
  createRedis,
  type ConnectionOption,
  type ConnectionSettings,
  type RedisConnection,
} from './connection.js';
import { probeServer, type ServerInfo } from './probe-server.js';

/** The first wait of a worker that cannot reach Redis as it starts, in ms; each next one doubles. */
const FIRST_WAIT_MS = 500;

/** The longest wait between two tries of a worker that cannot reach Redis as it starts, in ms. */
const MAX_WAIT_MS = 10_000;

/** A worker's connections to Redis, open and ready, and what it learnt of the server. */
export interface ReachedRedis {
  server: ServerInfo;
  /** Commands (BullMQ's workers get duplicates of it). */
  redis: RedisConnection;
  /** Run events. */
  subscriber: RedisConnection;
}

export interface WaitForRedisOptions {
  /** Fail at the first try instead of waiting (`--exit-on-unreachable`). */
  exitOnUnreachable: boolean;
  /** A line for the log, one per wait. */
  log: (line: string) => void;
  /** The connections' error listener. */
  onError: (error: Error) => void;
}

/**
 * Opens a worker's connections (after {@link probeServer}), waiting for Redis as long as it takes
 * (BullMQ's workers wait for Redis, and so do ours once started): while Redis cannot be reached
 * (`REDIS_UNAVAILABLE`: refused, reset, no such host; `REDIS_TIMEOUT`: it does not answer), it
 * tries again after 0.5 s, then 1 s, 2 s..., at most 10 s apart, logging one line per wait with
 * the reason. A refusal that waiting cannot mend (a wrong password, an ACL that forbids the user,
 * a database the server does not have) is thrown at once.
 *
 * @throws QueueflowError `REDIS_UNAVAILABLE` or `REDIS_TIMEOUT` naming the server and the reason,
 *   with `exitOnUnreachable` (at the first failure); `INVALID_OPTION` for
 *   a database the server does not have; either of the first two for a refused password.
 */
export async function waitForRedis(
  connection: ConnectionOption | undefined,
  options: WaitForRedisOptions,
): Promise<ReachedRedis> {
  for (let tries = 1; ; tries++) {
    try {
      return await reachRedis(connection, options.onError);
    } catch (error) {
      if (options.exitOnUnreachable || !isUnreachable(error)) throw error;
      const waitMs = Math.min(FIRST_WAIT_MS * 2 ** (tries - 1), MAX_WAIT_MS);
      options.log(`${reasonOf(error)}; trying again in ${waitMs / 1000} s (try ${tries})`);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}

/** One try: probe the server, then open the two connections (closed again should either fail). */
async function reachRedis(
  connection: ConnectionOption | undefined,
  onError: (error: Error) => void,
): Promise<ReachedRedis> {
  // May this user run INFO? A least-privilege one may not (README "Production Redis"): then the
  // worker warns that it cannot check maxmemory-policy, and goes on.
  const server = await probeServer(connection);
  const settings: ConnectionSettings = { readyCheck: server.info };
  const redis = createRedis(connection, 'worker', onError, settings);
  const subscriber = createRedis(connection, 'subscriber', onError, settings);
  await connectAll([redis, subscriber]);
  return { server, redis, subscriber };
}

/** Refusals of a server that answered: waiting for it changes nothing. */
const REFUSED = /\b(WRONGPASS|NOAUTH|NOPERM)\b|invalid (username-)?password/i;

/** Whether `error` says Redis could not be reached (as opposed to a refusal, or bad options). */
function isUnreachable(error: unknown): boolean {
  if (!(error instanceof QueueflowError)) return false;
  if (error.code !== 'REDIS_UNAVAILABLE' && error.code !== 'REDIS_TIMEOUT') return false;
  return !REFUSED.test(error.message);
}

/** `Redis at <server> is unreachable (<why>)`, from a REDIS_UNAVAILABLE or REDIS_TIMEOUT error. */
function reasonOf(error: unknown): string {
  const { message } = error as Error;
  const unavailable = /^cannot connect to Redis at (\S+): (.*)$/s.exec(message);
  if (unavailable) return `Redis at ${unavailable[1]} is unreachable (${unavailable[2]})`;
  return message;
}
