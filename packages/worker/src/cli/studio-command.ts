import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { logFormatOption, logLevelOption, type LogFlags } from './log-flags.js';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { FlowDefinition } from '@queueflow/runtime';
import { clusterOption, connectionOf, prefixOption, redisOption, type ConnectionFlags } from './options.js';

interface StudioCommandOptions extends ConnectionFlags, LogFlags {
  port: number;
  host: string;
  flows?: string;
  readOnly?: boolean;
  /** `false`: `--no-token`, no token beyond loopback on purpose. */
  token?: string | false;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/**
 * `queueflow studio`: serves the studio for the runs under a prefix, from this process (no server
 * beyond Redis). Loopback only by default; prints its URL (with the token) once listening; Ctrl-C
 * or SIGTERM closes the event streams, the server and the engine.
 */
export function studioCommand(): Command {
  return new Command('studio')
    .description('serve queueflow studio: watch and steer runs in a browser')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .option('--port <n>', 'port to listen on (0: any free port)', portNumber, 4000)
    .option(
      '--host <host>',
      'address to listen on (loopback by default: the studio can cancel and fork runs)',
      '127.0.0.1',
    )
    .option('--flows <module>', 'module exporting FlowDefinitions: draws their graphs and lets fork start them')
    .option('--read-only', 'hide every action (cancel, retry, fork, answer) and refuse them')
    .addOption(new Option('--token <token>', 'require this token on every request').env('QUEUEFLOW_STUDIO_TOKEN'))
    .option(
      '--no-token',
      'listen beyond loopback without a token, on purpose (otherwise refused: anyone who reaches the port could act on runs)',
    )
    .addOption(logFormatOption())
    .addOption(logLevelOption())
    .action(async (opts: StudioCommandOptions) => serveStudio(opts));
}

async function serveStudio(options: StudioCommandOptions): Promise<void> {
  if (typeof options.token === 'string' && options.token.length < 8)
    throw new Error('--token: use at least 8 characters (it is the only lock on the studio)');
  const loopback = LOOPBACK_NAMES.has(options.host) || options.host.startsWith('127.');
  // As Jupyter does: beyond loopback, no token is a choice to say out loud, not a default.
  if (!loopback && options.token === undefined)
    throw new Error(
      `refusing to listen on ${options.host} without a token: anyone who reaches the port could ` +
        `${options.readOnly ? 'read every run' : 'cancel, retry and fork runs'}. Pass --token <at least 8 characters> ` +
        '(or QUEUEFLOW_STUDIO_TOKEN), or --no-token to listen without one on purpose',
    );
  // Loaded here, not with the CLI: every other command starts without the studio's modules.
  const [{ createLogger }, { createStudioHandler }, { loadFlows }, { RedisEngine }] = await Promise.all([
    import('./create-logger.js'),
    import('../studio/create-studio-handler.js'),
    import('../load-flows.js'),
    import('../redis-engine.js'),
  ]);
  const log = createLogger(options);
  const flows: FlowDefinition[] = options.flows ? await loadFlows(options.flows) : [];
  const engine = new RedisEngine({ connection: connectionOf(options), flows, prefix: options.prefix });
  try {
    await engine.list({ limit: 1 }); // fail now, with the reason, when Redis is not there
  } catch (error) {
    await engine.close();
    throw error;
  }
  const studio = createStudioHandler({
    engine,
    readOnly: options.readOnly ?? false,
    ...(options.token ? { token: options.token } : {}),
  });
  const server = createServer((req, res) => {
    // A page of another site that resolves its name to 127.0.0.1 (DNS rebinding) would reach a
    // loopback studio as same-origin: on loopback, only loopback host names are served.
    if (loopback && !options.token && !loopbackHostHeader(req)) return refuse(res);
    studio(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new Error(`port ${options.port} on ${options.host} is in use: pass another with --port`)
          : error,
      ),
    );
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = isIP(options.host) === 6 ? `[${options.host}]` : options.host;
  const query = options.token ? `?token=${encodeURIComponent(options.token)}` : '';
  const notes = [
    options.readOnly ? 'read-only' : undefined,
    flows.length ? `flows: ${flows.map((f) => f.name).join(', ')}` : 'no --flows: no graphs, no forks',
  ].filter(Boolean);
  const url = `http://${host}:${port}/${query}`;
  log.info(
    { url, prefix: options.prefix },
    `queueflow studio: ${url} (prefix '${options.prefix}'; ${notes.join('; ')})`,
  );
  if (!loopback && !options.token)
    log.warn(
      `queueflow studio: listening on ${options.host} without --token: anyone who reaches this port can ` +
        `${options.readOnly ? 'read every run' : 'cancel, retry and fork runs'}`,
    );

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) process.exit(1);
    stopping = true;
    log.info(`queueflow studio: ${signal}, closing`);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Requests in flight get a moment to finish; kept-alive connections do not hold the exit.
    const force = setTimeout(() => server.closeAllConnections(), 2000);
    void studio
      .close()
      .then(() => server.closeIdleConnections())
      .then(() => closed)
      .then(() => clearTimeout(force))
      .then(() => engine.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          log.error({ err: error }, `queueflow studio: ${(error as Error).message}`);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

function loopbackHostHeader(req: IncomingMessage): boolean {
  const host = req.headers.host ?? '';
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!;
  return LOOPBACK_NAMES.has(name) || /^127\.\d+\.\d+\.\d+$/.test(name);
}

function refuse(res: ServerResponse): void {
  res.writeHead(403, { 'Content-Type': 'application/json' });
  res.end(
    JSON.stringify({
      error: { code: 'FORBIDDEN', message: 'queueflow studio on loopback answers to localhost names only' },
    }),
  );
}

function portNumber(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new InvalidArgumentError(`expected a port from 0 to 65535, got '${value}'`);
  return port;
}
