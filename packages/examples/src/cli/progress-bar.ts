import cliProgress from 'cli-progress';
import prettyMilliseconds from 'pretty-ms';

/** A progress display for the batch. */
export interface Progress {
  /** `note`: what holds the batch back (a budget), shown after the figures; empty for nothing. */
  update(done: number, total: number, note?: string): void;
  stop(): void;
}

/** How often the progress line is printed when stderr is not a terminal (a log, CI), in ms. */
const LOG_PROGRESS_INTERVAL_MS = 5000;

/**
 * The progress of the batch on stderr (so stdout keeps only the report), with the rate in
 * `unit`s (documents by default) per second and the ETA, drawn by cli-progress. On a terminal, a bar redrawn in place;
 * otherwise (a log file, CI) cli-progress's non-TTY mode prints the same figures as a new line
 * every {@link LOG_PROGRESS_INTERVAL_MS}, so a long batch is never silent. Off (a no-op) when
 * `enabled` is false.
 */
export function createProgressBar(
  total: number,
  enabled: boolean,
  unit: { many: string; short: string } = { many: 'documents', short: 'docs' },
): Progress {
  if (!enabled) return { update() {}, stop() {} };
  const tty = process.stderr.isTTY === true;
  const figures = `{value}/{total} ${unit.many} | {rate} ${unit.short}/s | {duration_formatted} elapsed, ETA {eta_formatted}{note}`;
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: tty ? ` {bar} {percentage}% | ${figures}` : `progress: {percentage}% | ${figures}`,
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
      noTTYOutput: true,
      notTTYSchedule: LOG_PROGRESS_INTERVAL_MS,
      // Without a terminal the ETA is recomputed at each line, not only on updates.
      etaAsynchronousUpdate: !tty,
      formatTime: formatSeconds,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = performance.now();
  bar.start(total, 0, { rate: '0.0', note: '' });
  return {
    update(done, _total, note = '') {
      const seconds = (performance.now() - started) / 1000;
      bar.update(done, { rate: seconds > 0 ? (done / seconds).toFixed(1) : '0.0', note: note ? ` | ${note}` : '' });
    },
    stop() {
      bar.stop();
    },
  };
}

/**
 * A duration for the progress line (elapsed, ETA): `5m 59s`, `1h 2m`; `?` while unknown (no rate
 * yet: cli-progress's own formatter printed its `INF` as `NFs`, and rounded 359.6 s to `5m60s`).
 * cli-progress passes seconds, or the text `INF` / `NULL`.
 */
export function formatSeconds(seconds: number | string): string {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) return '?';
  const whole = Math.round(seconds);
  return whole === 0 ? '0s' : prettyMilliseconds(whole * 1000, { unitCount: 2 });
}
