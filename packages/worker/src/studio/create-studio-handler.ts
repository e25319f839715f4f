import type { IncomingMessage, ServerResponse } from 'node:http';
import { RunCensus } from './run-census.js';
import { StudioApi } from './studio-api.js';
import { StudioAssets, type PageConfig } from './studio-assets.js';
import type { StudioEngine } from './studio-engine.js';
import { StudioHttpError, toStudioHttpError } from './studio-http-error.js';
import { StudioLive, type StudioLiveOptions } from './studio-live.js';
import { StudioToken } from './studio-token.js';

/** Options of {@link createStudioHandler}. */
export interface StudioHandlerOptions {
  /** The engine whose runs the studio shows: a `RedisEngine` or a `LocalEngine`. Not closed by the studio. */
  engine: StudioEngine;
  /** Hide every action in the page and refuse them in the API (403 `READ_ONLY`). @defaultValue false */
  readOnly?: boolean;
  /**
   * When set, every request needs it: `Authorization: Bearer <token>` or `?token=<token>` (the
   * page carries it; open the studio once as `…/?token=<token>`).
   */
  token?: string;
  /**
   * The path the studio is served under, as the browser sees it, e.g. `/studio`. Requests whose
   * URL still starts with it have it removed. @defaultValue the mount path a framework gives
   * (Express's `req.baseUrl`), else `''` (the root)
   */
  basePath?: string;
  /** Largest JSON body of an action (a fork's edited `shared`, an answer), in bytes. @defaultValue 4 MiB */
  maxBodyBytes?: number;
  /** Timings of the live updates (for tests). */
  live?: StudioLiveOptions;
  /** How long the counts per status are reused, in ms. @defaultValue 1000 */
  countsMaxAgeMs?: number;
  /** @internal Where the page's files are (tests). @defaultValue this package's `dist/studio-ui` */
  assetsDir?: string;
}

/** A Node request handler serving the studio; `close` ends its live streams. */
export interface StudioHandler {
  /** Answers one request; with `next` (Express, middie), a URL outside `basePath` goes on to it. */
  (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void): void;
  /** Ends every open event stream and the engine subscription behind them (before `server.close()`). */
  close(): Promise<void>;
}

/**
 * The page's view URLs (the app's routes, app.tsx): anything else that is not `/api/…` is a file.
 * An id in a path is encoded (`agent:type%2Fkey`, a desk mail's `easy-ham-2%2F00199`).
 */
const VIEW = /^\/(?:runs\/[^/]+|queues|workers|mailboxes|agents(?:\/[^/]+)?|conversations(?:\/[^/]+)?)?\/?$/;

/**
 * queueflow studio as a Node request handler: the browser app (runs, a run with its graph, step
 * diffs, fan-out and `shared`; workers; mailboxes) and the JSON API behind it, with live updates
 * over Server-Sent Events from one `engine.watch` subscription shared by every open page.
 * Mount it on `http.createServer`, or under a path in Express (`app.use('/studio', handler)`) or
 * Fastify (`@fastify/middie`: `fastify.use('/studio', handler)`), as bull-board is mounted.
 *
 * @example
 * ```ts
 * import http from 'node:http';
 * import { RedisEngine, createStudioHandler } from '@queueflow/worker';
 *
 * const engine = new RedisEngine({ connection: process.env.REDIS_URL, flows });
 * const studio = createStudioHandler({ engine, token: process.env.STUDIO_TOKEN });
 * http.createServer(studio).listen(4000, '127.0.0.1');
 * ```
 * @throws TypeError for an empty `token` or a `basePath` that does not start with `/`.
 */
export function createStudioHandler(options: StudioHandlerOptions): StudioHandler {
  const readOnly = options.readOnly ?? false;
  const token = options.token === undefined ? undefined : new StudioToken(options.token);
  const fixedBase = options.basePath === undefined ? undefined : normaliseBasePath(options.basePath);
  const census = new RunCensus(options.engine, { maxAgeMs: options.countsMaxAgeMs ?? 1000 });
  const live = new StudioLive(options.engine, census, options.live);
  const assets = new StudioAssets(options.assetsDir);
  const api = new StudioApi(options.engine, census, live, {
    readOnly,
    maxBodyBytes: options.maxBodyBytes ?? 4 * 1024 * 1024,
    meta: { readOnly, tokenRequired: token !== undefined },
  });

  const handle = async (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => {
    const url = new URL(req.url ?? '/', 'http://studio.invalid');
    const mounted = mountPathOf(req);
    const basePath = fixedBase ?? mounted;
    let path = url.pathname;
    if (fixedBase && !mounted) {
      // On a plain server: the URL still starts with the base path, or it is not the studio's.
      if (path === fixedBase || path.startsWith(`${fixedBase}/`)) path = path.slice(fixedBase.length) || '/';
      else if (next) return next();
      else throw new StudioHttpError(404, 'NOT_FOUND', `queueflow studio is under ${fixedBase}/`);
    }
    const isApi = path === '/api' || path.startsWith('/api/');
    if (token && !token.allows(req, url.searchParams, !isApi)) {
      if (isApi)
        throw new StudioHttpError(
          401,
          'UNAUTHORIZED',
          'this studio needs its token: `Authorization: Bearer <token>` or `?token=<token>`',
        );
      res.writeHead(401, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end('queueflow studio needs its token: open the URL it printed, ending in ?token=<token>');
      return;
    }
    if (isApi) return api.handle(req, res, path, url.searchParams);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      throw new StudioHttpError(405, 'METHOD_NOT_ALLOWED', `${req.method} ${path}: the page and its files are GET`);
    if (VIEW.test(path)) {
      const config: PageConfig = { basePath, readOnly, ...(options.token ? { token: options.token } : {}) };
      const query = url.searchParams.get('token');
      const cookie = token && query !== null ? { 'Set-Cookie': token.cookie(query, `${basePath}/`) } : undefined;
      assets.page(res, config, req.method === 'HEAD', cookie);
      return;
    }
    assets.file(req, res, path);
  };

  const handler = ((req, res, next) => {
    handle(req, res, next).catch((error: unknown) => sendError(res, error));
  }) as StudioHandler;
  handler.close = () => live.close();
  return handler;
}

function sendError(res: ServerResponse, error: unknown): void {
  const { status, code, message } = toStudioHttpError(error);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify({ error: { code, message } });
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
  });
  res.end(text);
}

/**
 * The path a framework mounted the handler under and took off `req.url`: Express's `req.baseUrl`,
 * else what `req.originalUrl` (Express, `@fastify/middie`) has before `req.url`; `''` when none.
 */
function mountPathOf(req: IncomingMessage): string {
  const { baseUrl, originalUrl } = req as { baseUrl?: unknown; originalUrl?: unknown };
  if (typeof baseUrl === 'string') return normaliseBasePath(baseUrl);
  if (typeof originalUrl !== 'string' || originalUrl === req.url) return '';
  const original = originalUrl.split('?')[0]!;
  const rest = (req.url ?? '/').split('?')[0]!;
  const trimmed = rest === '/' ? '' : rest;
  return original.endsWith(trimmed) ? normaliseBasePath(original.slice(0, original.length - trimmed.length)) : '';
}

/** `/studio/` → `/studio`; `/` → `''`. @throws TypeError for a path that does not start with `/`. */
function normaliseBasePath(path: string): string {
  if (path === '') return '';
  if (!path.startsWith('/') || /[\s"<>?#]/.test(path))
    throw new TypeError(`createStudioHandler: expected \`basePath\` to be a URL path starting with '/', got '${path}'`);
  return path.replace(/\/+$/, '');
}
