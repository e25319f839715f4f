/**
 * Prints what one `npm test` pass took (issue 29): its wall time, its tests, and the 10 slowest
 * test files, from the JSON report vitest wrote (`--reporter=json --outputFile.json=<file>`).
 * `.ci/run` calls it for each pass at its end.
 *
 * Usage: npm run test-times -w @queueflow/tests -- <label> <wall seconds> <report.json>
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

/** The parts of vitest's JSON report read here (Jest's format). */
interface Report {
  numTotalTests: number;
  numFailedTests: number;
  testResults: { name: string; startTime: number; endTime: number }[];
}

const [label, seconds, file] = process.argv.slice(2) as [string, string, string];
let report: Report;
try {
  report = JSON.parse(readFileSync(file, 'utf8')) as Report;
} catch (error) {
  console.log(`ci: ${label}: ${seconds} s (no test report: ${(error as Error).message})`);
  process.exit(0);
}
const files = report.testResults.map((result) => ({
  // Named from where npm was run (the repository's root in .ci/run), not this package.
  name: relative(process.env.INIT_CWD ?? process.cwd(), result.name),
  seconds: (result.endTime - result.startTime) / 1000,
}));
const total = files.reduce((sum, f) => sum + f.seconds, 0);
console.log(
  `ci: ${label}: ${seconds} s wall, ${report.numTotalTests} tests in ${files.length} files ` +
    `(${Math.round(total)} s of file time), ${report.numFailedTests} failed`,
);
for (const f of files.sort((a, b) => b.seconds - a.seconds).slice(0, 10))
  console.log(`  ${f.seconds.toFixed(1).padStart(6)} s  ${f.name}`);
