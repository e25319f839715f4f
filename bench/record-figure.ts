import { appendFileSync } from 'node:fs';
import { FIGURES_FILE_ENV } from './bench-env.js';

/**
 * One figure a benchmark measured. `npm run bench` collects every figure of the run (see
 * {@link recordFigure}); `--json` writes them with the commit, `npm run bench:compare` compares the
 * ratios with the last release's line of `bench/history.jsonl`.
 */
export interface Figure {
  /** Stable id, `<benchmark>.<what>` (`in-process.ratio`); lines of the history are compared by it. */
  name: string;
  value: number;
  /**
   * `'×'` for a ratio of two figures measured in the same run against each other (the figures
   * compared across runs and machines), else the unit of an absolute figure (`steps/s`, `ms`, `B`).
   */
  unit: string;
  /** Which way is better. */
  better: 'higher' | 'lower';
  /** The bar the figure must reach, in the better direction (`in-process.ratio` ≥ 2.0). */
  bar?: number;
}

/**
 * Records `figure` for the run of `npm run bench`: appends it, as a line of JSON, to the file
 * named by `QUEUEFLOW_BENCH_FIGURES`. Does nothing when a benchmark runs on its own (the variable
 * is unset); what it prints is unchanged either way.
 *
 * @throws TypeError for a value that is not a finite number (a benchmark that measured nothing).
 */
export function recordFigure(figure: Figure): void {
  if (typeof figure.value !== 'number' || !Number.isFinite(figure.value)) {
    throw new TypeError(`recordFigure: ${figure.name} is ${String(figure.value)}, expected a finite number`);
  }
  const file = process.env[FIGURES_FILE_ENV];
  // Four significant digits: more would be noise, and history lines stay short.
  if (file) appendFileSync(file, `${JSON.stringify({ ...figure, value: Number(figure.value.toPrecision(4)) })}\n`);
}
