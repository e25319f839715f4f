import { hostname } from 'node:os';
import { Option } from 'commander';
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';

/** How a long-running command (`worker`, `studio`) writes its log lines. */
export interface LogFlags {
  /** `json`: one JSON object per line (pino's); `pretty`: readable lines. @defaultValue pretty on a terminal, else json */
  logFormat?: 'json' | 'pretty';
  /** pino's level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. @defaultValue info */
  logLevel: string;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export const logFormatOption = (): Option =>
  new Option(
    '--log-format <format>',
    'log lines as JSON (one object per line) or pretty (default: pretty on a terminal, else json)',
  )
    .choices(['json', 'pretty'])
    .env('QUEUEFLOW_LOG_FORMAT');

export const logLevelOption = (): Option =>
  new Option('--log-level <level>', 'the least level logged; debug logs every try of a step')
    .choices(LEVELS)
    .env('QUEUEFLOW_LOG_LEVEL')
    .default('info');

/**
 * The process's logger (pino) on stdout: JSON lines, or pino-pretty's readable lines (colours on
 * a terminal), per `--log-format`. Every line carries `pid` and `hostname`, and `bindings`.
 */
export function createLogger(flags: LogFlags, bindings: Record<string, unknown> = {}): Logger {
  const format = flags.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json');
  const options = { level: flags.logLevel, base: { pid: process.pid, hostname: hostname(), ...bindings } };
  if (format === 'json') return pino(options, pino.destination({ dest: 1, sync: true }));
  return pino(
    options,
    pretty({
      colorize: process.stdout.isTTY === true,
      sync: true,
      ignore: 'hostname',
      translateTime: 'SYS:HH:MM:ss.l',
    }),
  );
}
