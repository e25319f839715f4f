/**
 * Issue 16, item 2: a prefix whose hash tag is broken (`{}`, `x{}`, `a{b`) used to be accepted,
 * and every script then failed with CROSSSLOT on a Redis Cluster node. It is refused before
 * anything connects: by the RedisEngine constructor, by startWorker and by every CLI command that
 * takes `--prefix` (one line on stderr naming `--prefix`, exit code 1; before the command loads a
 * flows module). Nothing here needs Redis: the refusal comes first (the URLs point where nothing
 * listens).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defineFlow, Node } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '@queueflow/worker';
import { refusedArguments } from '../cli/cli-harness.js';
import { startScript } from '../support/cli-process.js';
import { compiledModule } from '../support/compiled-module.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));
const FLOWS = compiledModule(fileURLToPath(new URL('../cli/cli-flows.ts', import.meta.url)));
const NOWHERE = 'redis://127.0.0.1:1';
const flow = defineFlow('hash-tag', () => new Node());

const broken = [
  ['{}', 'its hash tag is empty'],
  ['x{}', 'its hash tag is empty'],
  ['a{b', "its first '{' has no '}' after it"],
] as const;

function refusal(prefix: string, problem: string, source = 'prefix'): string {
  return `expected \`${source}\` to hold a Redis Cluster hash tag (a non-empty text between the first '{' and the first '}' after it, as in '{qf}'), got \`${prefix}\`: ${problem}`;
}

describe.each(broken)('prefix %s', (prefix, problem) => {
  it('is refused by the RedisEngine constructor with a TypeError naming it and what a hash tag is', () => {
    expect(() => new RedisEngine({ connection: NOWHERE, flows: [flow], prefix })).toThrow(
      new TypeError(refusal(prefix, problem)),
    );
  });

  it('is refused by startWorker before it connects', async () => {
    await expect(startWorker({ connection: NOWHERE, flows: [flow], prefix })).rejects.toThrow(
      new TypeError(refusal(prefix, problem)),
    );
  });

  // Parsed in this process (cli-harness.ts): the CLI's checks of its options, as its process runs them.
  it.each([['worker', '--flows', FLOWS], ['status', 'some-run'], ['list']])(
    'is refused by `queueflow %s` in one line',
    async (...args) => {
      expect(await refusedArguments([...args, '--redis', NOWHERE, '--prefix', prefix])).toEqual({
        code: 1,
        stdout: '',
        stderr: `queueflow: ${refusal(prefix, problem, '--prefix')}\n`,
      });
    },
  );
});

it('a `queueflow` process refused a prefix exits 1 with that one line, before it loads the flows module', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
  delete env.REDIS_URL;
  // A flows module that does not exist: loaded first, it would be the error.
  const args = ['worker', '--flows', 'no-such-flows.js', '--redis', NOWHERE, '--prefix', '{}'];
  expect(await startScript(CLI, args, { env, timeoutMs: 10_000 }).exited).toEqual({
    code: 1,
    stdout: '',
    stderr: `queueflow: ${refusal('{}', 'its hash tag is empty', '--prefix')}\n`,
  });
});
