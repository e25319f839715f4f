/**
 * `queueflow init` (issue 31): the README it writes gives the same install line it prints, here
 * from the repository's workspace (the tarballs of `npm pack`, until the packages are published).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { queueflow } from './cli-harness.js';

const dir = mkdtempSync(path.join(tmpdir(), 'queueflow-init-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("init's README gives the install line init prints", async () => {
  const app = path.join(dir, 'my-app');
  const out = await queueflow(['init', app]);
  expect(out.code, out.stderr).toBe(0);
  const printed = out.stdout
    .split('\n')
    .filter((line) => /^\s+(\(cd .*npm pack|npm install)/.test(line))
    .map((line) => line.trim());
  expect(printed).toHaveLength(2);
  expect(printed[1]).toMatch(/^npm install \S+queueflow-runtime-[\d.]+\.tgz \S+queueflow-worker-[\d.]+\.tgz/);
  const readme = readFileSync(path.join(app, 'README.md'), 'utf8');
  for (const line of printed) expect(readme).toContain(line);
  expect(readme).not.toContain('{{install}}');
});
