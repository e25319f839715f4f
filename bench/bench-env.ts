/** The environment `npm run bench` (bench/run-benchmarks.ts) hands every package's benchmarks. */

/** Names the file `recordFigure` appends each figure to, as a line of JSON. */
export const FIGURES_FILE_ENV = 'QUEUEFLOW_BENCH_FIGURES';

/** `npm run bench -- --only a,b`: only the benchmark files whose name contains `a` or `b`. */
export const ONLY_ENV = 'QUEUEFLOW_BENCH_ONLY';
