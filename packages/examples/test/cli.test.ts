/**
 * The built command lines' errors: one line, no stack, exit code 1, and no hang (each process
 * has a deadline; a hang fails the test). Needs no Redis: the Redis named here never answers.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { linesOf, runCli } from './cli-process.js';

/** A Redis URL where nothing listens (port 1 refuses connections). */
const NO_REDIS = 'redis://127.0.0.1:1';

describe.concurrent('pipeline and taboo command lines: clear errors', () => {
  it.each([
    ['pipeline', ['--limit', '10', '--redis', NO_REDIS]],
    ['taboo', ['--redis', NO_REDIS]],
  ] as const)('%s --redis <unreachable> names the Redis in one line and exits 1', async (name, args) => {
    const out = await runCli(name, [...args]);
    expect(out.code, out.stderr).toBe(1);
    expect(out.stdout).toBe('');
    const lines = linesOf(out.stderr);
    expect(lines).toHaveLength(2); // the run's header, then the error
    expect(lines[1]).toBe(`error: cannot connect to Redis at ${NO_REDIS}: connect ECONNREFUSED 127.0.0.1:1`);
  });

  const DECK = '(apple, piano, volcano, penguin, lighthouse, compass)';
  it.each([
    [
      ['--words', ''],
      `error: option '--words <list>' argument '' is invalid. expected at least one word of the deck ${DECK}`,
    ],
    [
      ['--words', ' , '],
      `error: option '--words <list>' argument ' , ' is invalid. expected at least one word of the deck ${DECK}`,
    ],
    [
      ['--words', 'apple,banana'],
      `error: option '--words <list>' argument 'apple,banana' is invalid. no card 'banana' in the deck ${DECK}`,
    ],
  ])('taboo %j: one line, exit 1, no game', async (args, expected) => {
    expect(await runCli('taboo', args)).toEqual({ code: 1, stdout: '', stderr: `${expected}\n` });
  });

  it('pipeline --input takes a relative path from where npm was run (INIT_CWD), not from the package folder', async () => {
    const home = mkdtempSync(path.join(tmpdir(), 'queueflow-cli-'));
    try {
      mkdirSync(path.join(home, 'docs'));
      const env = { INIT_CWD: home };
      expect(await runCli('pipeline', ['--input', './docs'], { env })).toEqual({
        code: 1,
        stdout: '',
        stderr: `error: no .eml, .txt or .md files under ${path.join(home, 'docs')}\n`,
      });
      expect(await runCli('pipeline', ['--input', 'nowhere'], { env })).toEqual({
        code: 1,
        stdout: '',
        stderr: `error: --input: no such directory: ${path.join(home, 'nowhere')}\n`,
      });
      writeFileSync(path.join(home, 'a-file.txt'), 'not a folder');
      expect((await runCli('pipeline', ['--input', 'a-file.txt'], { env })).stderr).toBe(
        `error: --input: not a directory: ${path.join(home, 'a-file.txt')}\n`,
      );
      // Run directly (no npm, no INIT_CWD): from the working directory.
      expect((await runCli('pipeline', ['--input', 'docs'], { cwd: home })).stderr).toBe(
        `error: no .eml, .txt or .md files under ${path.join(home, 'docs')}\n`,
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it.each(['pipeline', 'taboo'] as const)('%s --prefix: needs --redis, and may not be empty', async (name) => {
    expect(await runCli(name, ['--prefix', 'mine'])).toEqual({
      code: 1,
      stdout: '',
      stderr: "error: --prefix is the workers' key prefix: it needs --redis\n",
    });
    expect(await runCli(name, ['--redis', NO_REDIS, '--prefix', ''])).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "error: option '--prefix <prefix>' argument '' is invalid. the prefix is empty: give the workers' key prefix, e.g. '{qf}'\n",
    });
  });
});
