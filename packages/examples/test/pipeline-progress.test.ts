/**
 * The pipeline command without a terminal (a log, CI): progress lines on stderr instead of
 * silence, the first at the start and the last at the end, each with done/total, rate and ETA.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { linesOf, runCli } from './cli-process.js';

// A cold classifier cache means training first: seconds idle, more on a loaded machine.
it('pipeline without a terminal prints progress lines: done/total, docs/s, ETA', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'queueflow-progress-'));
  try {
    const out = await runCli('pipeline', ['--limit', '30', '--out', path.join(dir, 'records.jsonl')], {
      timeoutMs: 150_000,
    });
    expect(out.code, out.stderr).toBe(0);
    const progress = linesOf(out.stderr).filter((line) => line.startsWith('progress: '));
    expect(progress[0]).toMatch(/^progress: 0% \| 0\/30 documents \| 0\.0 docs\/s \| \d+s elapsed, ETA /);
    expect(progress.at(-1)).toMatch(/^progress: 100% \| 30\/30 documents \| [\d.]+ docs\/s \| \d+s elapsed, ETA 0s$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);
