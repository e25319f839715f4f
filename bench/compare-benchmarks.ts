/**
 * `npm run bench:compare`: the change of each ratio of a result (`npm run bench -- --json`)
 * against the last line of `bench/history.jsonl` (the last release), flagging each that got worse
 * by more than 10 %. Exits 1 when one did. Only ratios are compared: both sides of a ratio were
 * measured in the same run, so a ratio holds across machines and loads where an absolute rate does not.
 *
 * Usage: npm run bench:compare [-- <result.json>]   (default bench/latest.json)
 */
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { LATEST_FILE, readHistory, readResult, ROOT, type BenchResult } from './bench-result.js';
import { barNote } from './format-figure.js';

/** A ratio that got worse by more than this fraction of its value is flagged. */
const WORSE_BY = 0.1;

const { positionals } = parseArgs({ allowPositionals: true });
const file = resolve(positionals[0] ?? LATEST_FILE);
const current = readResult(file);
const history = readHistory();
const last = history.at(-1);
const describe = (result: BenchResult): string =>
  `${result.release ? `release ${result.release}, ` : ''}${result.commit.slice(0, 10)}${result.dirty ? ' (dirty)' : ''}, ${result.date}, load ${result.load.before}`;

console.log(`bench: ${relative(ROOT, file)} (${describe(current)})`);
if (!last) {
  console.log('  bench/history.jsonl has no line yet: nothing to compare with (`npm run bench:record` adds one)');
} else {
  console.log(`  against the last line of bench/history.jsonl (${describe(last)})`);
  let flagged = 0;
  for (const [name, figure] of Object.entries(current.figures)) {
    if (figure.unit !== '×') continue;
    const before = last.figures[name];
    const head = `  ${name.padEnd(40)} ${figure.value.toFixed(2).padStart(7)}×`;
    if (!before || before.unit !== '×') {
      console.log(`${head}   (new)${barNote(figure)}`);
      continue;
    }
    const change = (figure.value - before.value) / before.value;
    const worse = figure.better === 'higher' ? -change : change;
    const flag = worse > WORSE_BY ? `   ← WORSE by ${(worse * 100).toFixed(0)} %` : '';
    if (flag) flagged++;
    const sign = change >= 0 ? '+' : '';
    console.log(
      `${head}   was ${before.value.toFixed(2).padStart(6)}×  ${`${sign}${(change * 100).toFixed(1)} %`.padStart(9)}${barNote(figure)}${flag}`,
    );
  }
  for (const name of Object.keys(last.figures)) {
    if (last.figures[name]!.unit === '×' && !(name in current.figures))
      console.log(`  ${name.padEnd(40)}  (not measured)`);
  }
  if (flagged > 0) {
    console.log(`bench: ${flagged} ratio${flagged > 1 ? 's' : ''} worse by more than ${WORSE_BY * 100} %`);
    process.exitCode = 1;
  }
}
