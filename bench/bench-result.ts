import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Figure } from './record-figure.js';

/** The figures of one `npm run bench`, with where and on what they were measured. */
export interface BenchResult {
  /** The packages' version, set on the lines of `bench/history.jsonl` (one per release). */
  release?: string;
  /** `git rev-parse HEAD` of the checkout measured. */
  commit: string;
  /** Whether the checkout had changes not committed (`git status --porcelain`). */
  dirty: boolean;
  /** When the run ended, ISO 8601. */
  date: string;
  node: string;
  cpus: number;
  /** 1-minute load average before and after the run: a busy machine explains low figures. */
  load: { before: number; after: number };
  /** Every figure by name, in the order measured. */
  figures: Record<string, Omit<Figure, 'name'>>;
}

/** The repository's root folder. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** One line per release, oldest first. */
export const HISTORY_FILE = fileURLToPath(new URL('history.jsonl', import.meta.url));
/** Where `npm run bench -- --json` writes by default (not committed). */
export const LATEST_FILE = fileURLToPath(new URL('latest.json', import.meta.url));

/** The commit of the checkout and whether it has changes. */
export function checkoutState(): { commit: string; dirty: boolean } {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  return { commit: git('rev-parse', 'HEAD'), dirty: git('status', '--porcelain', '--untracked-files=no') !== '' };
}

/** The machine facts a result carries. */
export function machine(): { node: string; cpus: number; load1: number } {
  return { node: process.version, cpus: cpus().length, load1: Number(loadavg()[0]!.toFixed(2)) };
}

/**
 * Reads a result written by `npm run bench -- --json`.
 *
 * @throws Error naming the file when it is missing or not a result.
 */
export function readResult(file: string): BenchResult {
  if (!existsSync(file)) throw new Error(`${file} does not exist: run \`npm run bench -- --json\` first`);
  return checkResult(JSON.parse(readFileSync(file, 'utf8')), file);
}

/** The lines of `bench/history.jsonl`, oldest first (none when the file is missing). */
export function readHistory(file = HISTORY_FILE): BenchResult[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line, index) => ({ line, index }))
    .filter(({ line }) => line.trim() !== '')
    .map(({ line, index }) => checkResult(JSON.parse(line), `${file}:${index + 1}`));
}

function checkResult(value: unknown, where: string): BenchResult {
  const result = value as Partial<BenchResult> | null;
  if (typeof result?.commit !== 'string' || typeof result.figures !== 'object' || result.figures === null) {
    throw new Error(`${where} is not a benchmark result (expected an object with "commit" and "figures")`);
  }
  return result as BenchResult;
}
