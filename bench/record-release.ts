/**
 * `npm run bench:record`: adds a result (`npm run bench -- --json`) to `bench/history.jsonl` as
 * the line of the packages' current version, replacing that version's line if there is one: the
 * history keeps one line per release. Run it on an idle machine when cutting a release.
 *
 * Usage: npm run bench:record [-- <result.json>]   (default bench/latest.json)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { HISTORY_FILE, LATEST_FILE, readHistory, readResult, ROOT } from './bench-result.js';

const { positionals } = parseArgs({ allowPositionals: true });
const file = resolve(positionals[0] ?? LATEST_FILE);
const { version } = JSON.parse(readFileSync(join(ROOT, 'packages/runtime/package.json'), 'utf8')) as {
  version: string;
};
const { release: _previous, ...measured } = readResult(file);
if (measured.dirty) console.warn(`bench: ${relative(ROOT, file)} measured a checkout with changes not committed`);
const result = { release: version, ...measured };
const history = readHistory().filter((line) => line.release !== version);
history.push(result);
writeFileSync(HISTORY_FILE, history.map((line) => `${JSON.stringify(line)}\n`).join(''));
console.log(`bench: ${relative(ROOT, file)} recorded in bench/history.jsonl as release ${version}`);
