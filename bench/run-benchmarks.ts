/**
 * `npm run bench`: builds, runs every package's benchmarks (`turbo run bench`, one package at a
 * time), then prints the figures they recorded, ratios first, each against its bar.
 *
 * Usage: npm run bench [-- --json [--out <file>]] [-- --only <substring,...>]
 *   --json   also writes every figure with the commit, the machine and its load to `--out`
 *            (default bench/latest.json), for `npm run bench:compare` and `npm run bench:record`.
 *   --only   runs only the benchmarks whose file name contains one of the substrings.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkoutState, LATEST_FILE, machine, ROOT, type BenchResult } from './bench-result.js';
import { formatFigure } from './format-figure.js';
import { FIGURES_FILE_ENV, ONLY_ENV } from './bench-env.js';
import type { Figure } from './record-figure.js';

const { values } = parseArgs({
  options: { json: { type: 'boolean', default: false }, out: { type: 'string' }, only: { type: 'string' } },
});
const out = resolve(values.out ?? LATEST_FILE);

const scratch = mkdtempSync(join(tmpdir(), 'queueflow-bench-'));
const figuresFile = join(scratch, 'figures.jsonl');
writeFileSync(figuresFile, '');
const before = machine();
let status = 0;
try {
  for (const args of [
    ['run', 'build'],
    ['run', 'bench', '--concurrency=1'],
  ]) {
    const turbo = spawnSync('turbo', args, {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, [FIGURES_FILE_ENV]: figuresFile, ...(values.only ? { [ONLY_ENV]: values.only } : {}) },
    });
    status = turbo.status ?? 1;
    if (status !== 0) break;
  }
  const figures = readFileSync(figuresFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Figure);
  const ratios = figures.filter((figure) => figure.unit === '×');
  console.log(`\n=== figures: ${figures.length}, of which ${ratios.length} ratios ===`);
  for (const figure of [...ratios, ...figures.filter((figure) => figure.unit !== '×')]) {
    console.log(`  ${formatFigure(figure)}`);
  }
  if (values.json) {
    const result: BenchResult = {
      ...checkoutState(),
      date: new Date().toISOString(),
      node: before.node,
      cpus: before.cpus,
      load: { before: before.load1, after: machine().load1 },
      figures: Object.fromEntries(figures.map(({ name, ...figure }) => [name, figure])),
    };
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`bench: ${figures.length} figures of ${result.commit.slice(0, 10)} written to ${relative(ROOT, out)}`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exitCode = status;
