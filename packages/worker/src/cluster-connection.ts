import type { ClusterOptions, RedisOptions } from 'ioredis';

/**
 * Where a Redis Cluster is: the URLs of some of its nodes (`redis://host:port`, `rediss://` for
 * TLS, `redis://user:password@host:port` for an ACL user), from which ioredis learns the others.
 * Every URL must use the same scheme and credentials, and none may name a database (a cluster
 * has only db 0).
 *
 * @example
 * ```ts
 * const engine = new RedisEngine({
 *   connection: { cluster: ['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379'] },
 *   flows: [review],
 * });
 * ```
 */
export interface ClusterConnection {
  /** URLs of startup nodes: at least one; list a few, so that one being down does not matter. */
  cluster: string[];
  /**
   * More ioredis Cluster options (`natMap`, `dnsLookup`, `redisOptions.tls`, ...); what queueflow
   * sets for each connection's role (offline queue, retries per request, connection name) wins.
   */
  options?: ClusterOptions;
}

/** A cluster's startup nodes and what every node connection shares (credentials, TLS). */
export interface ClusterNodes {
  nodes: { host: string; port: number }[];
  /** `username`, `password`, `tls` from the URLs. */
  redisOptions: RedisOptions;
  /** The URLs without passwords, as errors and logs name the cluster. */
  names: string[];
}

/** Whether `connection` names a Redis Cluster (`{ cluster: [...] }`) rather than one server. */
export function isClusterConnection(connection: unknown): connection is ClusterConnection {
  return typeof connection === 'object' && connection !== null && 'cluster' in connection;
}

/**
 * Checks a list of cluster node URLs and reads the startup nodes from it.
 *
 * @param source - how to name the value in errors, e.g. `connection.cluster` or `--cluster`.
 * @throws TypeError naming `source` (and the entry, as `source[i]`), what was expected and what
 *   was received: not a non-empty array of strings, an entry that is not a redis:// or rediss://
 *   URL with a host, one that names a database, or URLs that differ in scheme or credentials.
 */
export function clusterNodesOf(urls: unknown, source: string): ClusterNodes {
  if (!Array.isArray(urls) || urls.length === 0) {
    throw new TypeError(
      `expected \`${source}\` to be a non-empty array of redis:// or rediss:// URLs, got ${describe(urls)}`,
    );
  }
  const nodes: ClusterNodes['nodes'] = [];
  const names: string[] = [];
  let shared: { protocol: string; username: string; password: string } | undefined;
  urls.forEach((entry: unknown, i) => {
    const where = `${source}[${i}]`;
    if (typeof entry !== 'string')
      throw new TypeError(`expected \`${where}\` to be a URL string, got ${describe(entry)}`);
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new TypeError(`expected \`${where}\` to be a redis:// or rediss:// URL, got \`${entry}\``);
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      throw new TypeError(`expected \`${where}\` to use redis:// or rediss://, got \`${url.protocol}\``);
    }
    if (url.hostname === '') throw new TypeError(`expected \`${where}\` to name a host, got \`${entry}\``);
    if (url.pathname !== '' && url.pathname !== '/' && url.pathname !== '/0') {
      throw new TypeError(
        `expected \`${where}\` to name no database (a Redis Cluster has only db 0), got \`${url.pathname.slice(1)}\``,
      );
    }
    const mine = { protocol: url.protocol, username: url.username, password: url.password };
    shared ??= mine;
    if (mine.protocol !== shared.protocol || mine.username !== shared.username || mine.password !== shared.password) {
      throw new TypeError(
        `expected every URL of \`${source}\` to use the same scheme and credentials as the first, but \`${where}\` differs`,
      );
    }
    // IPv6 hosts come bracketed from URL; ioredis wants them bare.
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    nodes.push({ host, port: url.port === '' ? 6379 : Number(url.port) });
    const user = url.username ? `${url.username}@` : '';
    names.push(`${url.protocol}//${user}${url.host}`);
  });
  const { protocol, username, password } = shared!;
  return {
    nodes,
    names,
    redisOptions: {
      ...(username ? { username: decodeURIComponent(username) } : {}),
      ...(password ? { password: decodeURIComponent(password) } : {}),
      ...(protocol === 'rediss:' ? { tls: {} } : {}),
    },
  };
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `\`${value}\` (string)`;
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  return `\`${String(value)}\` (${value === null ? 'null' : typeof value})`;
}
