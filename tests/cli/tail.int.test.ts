/**
 * `queueflow tail <run> [--from ID] [--json]`: the built CLI in a process of its own prints a
 * run's stream as it grows and exits when the run ends; an in-process worker runs the steps.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamEntry } from '@queueflow/runtime';
import { RedisEngine, startWorker, type QueueflowWorker } from '@queueflow/worker';
import { startScript, type CliOutput } from '../support/cli-process.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { talker } from '../streams/stream-flows.js';

const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));

describe('queueflow tail', () => {
  const prefix = testPrefix('cli-tail');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [talker], prefix });
  let worker: QueueflowWorker;

  const tail = (args: string[]): Promise<CliOutput> =>
    startScript(CLI, ['tail', ...args, '--redis', redisUrl(), '--prefix', prefix], {
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      timeoutMs: 20_000,
    }).exited;

  beforeAll(async () => {
    worker = await startWorker({ connection: redisUrl(), flows: [talker], prefix });
  });
  afterAll(async () => {
    await worker.close();
    await engine.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it('prints each entry as it comes and exits when the run ends', async () => {
    const handle = await engine.start(talker, {}, { params: { words: 3, gapMs: 200 } });
    const out = await tail([handle.id]);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(
      ['0.0 speak  {"word":0}', '0.0 speak  {"word":1}', '0.0 speak  {"word":2}', '0.0 speak  done', ''].join('\n'),
    );
    expect(out.stderr).toBe(`run ${handle.id} completed\n`);
  });

  it('--json prints one entry per line; --from starts after an entry', async () => {
    const { id } = await engine.run(talker, {}, { params: { words: 2 } });
    const all = (await tail([id, '--json'])).stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as StreamEntry);
    expect(all.map((e) => e.data)).toEqual([{ word: 0 }, { word: 1 }, 'done']);
    expect(all[0]).toEqual({ id: all[0]!.id, step: 0, attempt: 0, node: 'speak', at: all[0]!.at, data: { word: 0 } });
    const rest = (await tail([id, '--json', '--from', all[0]!.id])).stdout.trim().split('\n');
    expect(rest.map((line) => (JSON.parse(line) as StreamEntry).id)).toEqual(all.slice(1).map((e) => e.id));
  });

  it('fails naming an unknown run or a bad --from', async () => {
    const missing = await tail(['no-such-run']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no run 'no-such-run'");
    const { id } = await engine.run(talker, {}, { params: { words: 1 } });
    const bad = await tail([id, '--from', 'yesterday']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('expected `from` to be a stream entry id');
  });
});
