/**
 * `npm run bench` of this package: runs every benchmark here (`*.bench.ts`, in name order), one
 * after the other, each in its own process so that none inherits another's connections, warm
 * JIT or leftover load. Exits non-zero if any benchmark failed.
 *
 * Usage: tsx bench/run-all.ts [substring]   (only the benchmarks whose file name contains it)
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const filter = process.argv[2] ?? '';
const benchmarks = readdirSync(dir)
  .filter((file) => file.endsWith('.bench.ts') && file.includes(filter))
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
