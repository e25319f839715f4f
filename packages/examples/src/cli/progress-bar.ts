import cliProgress from 'cli-progress';

/** A progress display for the batch. */
export interface Progress {
  update(done: number, total: number): void;
  stop(): void;
}

/**
 * A cli-progress bar on stderr (so stdout keeps only the report), with the rate in documents per
 * second. Off (a no-op) when `enabled` is false or stderr is not a terminal.
 */
export function createProgressBar(total: number, enabled: boolean): Progress {
  if (!enabled || !process.stderr.isTTY) return { update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format:
        ' {bar} {percentage}% | {value}/{total} documents | {rate} docs/s | {duration_formatted} elapsed, ETA {eta_formatted}',
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = performance.now();
  bar.start(total, 0, { rate: '0.0' });
  return {
    update(done) {
      const seconds = (performance.now() - started) / 1000;
      bar.update(done, { rate: seconds > 0 ? (done / seconds).toFixed(1) : '0.0' });
    },
    stop() {
      bar.stop();
    },
  };
}
