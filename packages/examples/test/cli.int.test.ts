/**
 * Ctrl-C (SIGINT) in the built command lines while their runs wait on Redis (no worker runs, so
 * the runs stay queued): one line saying what was cancelled, no stack, exit code 130, and the runs
 * cancelled in Redis, the cancel sent before the connections closed.
 */
import { RedisEngine } from '@queueflow/worker';
import { afterAll, describe, expect, it } from 'vitest';
import { documents, tabooGuesser, tabooHinter } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';
import { waitFor } from '../../../tests/support/wait-for.js';
import { linesOf, startCli, type CliProcess } from './cli-process.js';

/** Waits until the command line's stderr matches `pattern`; its match. */
function untilStderr(cli: CliProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return waitFor(`stderr to match ${pattern}`, () => pattern.exec(cli.output().stderr) ?? undefined, {
    timeoutMs: 60_000,
  });
}

describe('pipeline and taboo command lines on Redis: Ctrl-C', () => {
  const url = redisUrl();
  const prefix = testPrefix('examples-cli');
  const engine = new RedisEngine({
    connection: url,
    flows: [documents],
    agents: [tabooHinter, tabooGuesser],
    prefix,
  });

  afterAll(async () => {
    await engine.close();
    await deletePrefix(url, prefix);
  });

  it('pipeline --redis: cancels the run and says so in one line, exit 130', async () => {
    const cli = startCli('pipeline', ['--limit', '10', '--redis', url, '--prefix', prefix, '--no-progress']);
    const [, runId] = await untilStderr(cli, /^Run (\S+) started on /m);
    cli.signal('SIGINT');
    const out = await cli.exited;
    expect(out.code, out.stderr).toBe(130);
    expect(out.stdout).toBe('');
    expect(linesOf(out.stderr).at(-1)).toBe(`interrupted: run ${runId} cancelled`);
    expect(out.stderr).not.toMatch(/^\s+at |could not cancel|Error/m);
    expect((await engine.get(runId!))?.status).toBe('cancelled');
  });

  it('pipeline --redis: SIGTERM does as Ctrl-C does (the run cancelled), exit 143', async () => {
    const cli = startCli('pipeline', ['--limit', '10', '--redis', url, '--prefix', prefix, '--no-progress']);
    const [, runId] = await untilStderr(cli, /^Run (\S+) started on /m);
    cli.signal('SIGTERM');
    const out = await cli.exited;
    expect(out.code, out.stderr).toBe(143);
    expect(linesOf(out.stderr).at(-1)).toBe(`interrupted: run ${runId} cancelled`);
    expect((await engine.get(runId!))?.status).toBe('cancelled');
  });

  it('taboo --redis: deletes both agents, their queued turns cancelled, and says so in one line, exit 130', async () => {
    const cli = startCli('taboo', ['--redis', url, '--prefix', prefix, '--words', 'apple']);
    const [, hinter, guesser] = await untilStderr(cli, /^Agents (\S+) and (\S+);/m);
    const turns = await Promise.all([hinter!, guesser!].map(async (ref) => (await engine.agent(ref))?.running));
    cli.signal('SIGINT');
    const out = await cli.exited;
    expect(out.code, out.stderr).toBe(130);
    expect(out.stdout).toBe('');
    const game = hinter!.split('/')[1];
    expect(linesOf(out.stderr).at(-1)).toBe(
      `interrupted: game ${game} cancelled: agents ${hinter} and ${guesser} deleted`,
    );
    expect(out.stderr).not.toMatch(/^\s+at |could not cancel|Error/m);
    for (const ref of [hinter!, guesser!]) expect(await engine.agent(ref)).toBeUndefined();
    for (const runId of turns) expect((await engine.get(runId!))?.status).toBe('cancelled');
  });
});
