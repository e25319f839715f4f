/**
 * A package's `npm run bench`: runs every benchmark of the package it is started in
 * (`bench/*.bench.ts`, in name order), one after the other, each in its own process so that none
 * inherits another's connections, warm JIT or leftover load. Exits non-zero if any failed.
 *
 * Usage (in a package): tsx ../../bench/run-package-benchmarks.ts [substring,...]
 *   only the benchmarks whose file name contains one of the substrings; without any, those that
 *   `QUEUEFLOW_BENCH_ONLY` names the same way (`npm run bench -- --only ping-pong,fan-out`), else all.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ONLY_ENV } from './bench-env.js';

const dir = join(process.cwd(), 'bench');
const only = (process.argv[2] ?? process.env[ONLY_ENV] ?? '').split(',').filter((part) => part !== '');
const benchmarks = (existsSync(dir) ? readdirSync(dir) : [])
  .filter((file) => file.endsWith('.bench.ts') && (only.length === 0 || only.some((part) => file.includes(part))))
  .sort();
const failed: string[] = [];
for (const file of benchmarks) {
  console.log(`\n=== ${file} ===`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(dir, file)], { stdio: 'inherit' });
  if (run.status !== 0) failed.push(`${file} (${run.status ?? run.signal})`);
}
if (failed.length > 0) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
