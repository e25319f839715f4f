import { hostname } from 'node:os';
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogFlags } from './log-flags.js';

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
