import { Option } from 'commander';

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
