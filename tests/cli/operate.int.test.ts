/**
 * The `queueflow` commands that operate runs, as a user runs them: history, retry, fork, workers,
 * purge, `--json` on read commands, `list --flow --since`, `--version` and `QUEUEFLOW_PREFIX`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunInfo, RunResult, RunSummary, StepRecord, WorkerInfo } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { FLOWS, RUN_ID, at, parsed, queueflow, refusedArguments, startQueueflow } from './cli-harness.js';
import { flaky, greet, hold } from './cli-flows.js';
import { keysUnder } from '../support/redis-prefix.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';

describe('queueflow history, retry, fork, workers, list, purge', () => {
  const prefix = testPrefix('cli-operate');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [greet, flaky, hold], prefix });
  const dir = mkdtempSync(join(tmpdir(), 'queueflow-cli-operate-'));
  const redis = new Redis(redisUrl(), { maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    worker = await spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4 });
  }, 120_000);

  afterAll(async () => {
    await engine.close();
    await stopWorkers(worker ? [worker] : []);
    await deletePrefix(redisUrl(), prefix);
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  it('history prints each committed step, and --json the StepRecords', async () => {
    const result = await engine.run(greet, { name: 'Ada' }, { params: { greeting: 'Hi' } });
    const [text, asJson] = await Promise.all([
      queueflow(['history', result.id, ...at(prefix)]),
      queueflow(['history', result.id, '--json', ...at(prefix)]),
    ]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toMatch(/^#0 {2}greet → greeted {2}1 try {2}\d+ ms {2}\S+ {2}\S+:\d+:\S+$/);
    expect(text.stdout).toContain('add /text "Hi, Ada"');
    expect(text.stdout).toMatch(/#1 {2}sign → signed/);
    const json = parsed<StepRecord[]>(asJson);
    expect(json).toEqual(JSON.parse(JSON.stringify(await engine.history(result.id))));
    expect(json.map((record) => record.node)).toEqual(['greet', 'sign']);
  });

  it('retry lets a failed run go on under its id without running its committed steps again', async () => {
    const failWhile = join(dir, 'bug');
    writeFileSync(failWhile, 'present');
    const failed = await engine.run(flaky, {}, { params: { failWhile } });
    expect(failed.status).toBe('failed');
    expect(failed.shared).toEqual({ counted: 1 });
    rmSync(failWhile); // the fix is deployed
    const out = await queueflow(['retry', failed.id, ...at(prefix)]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toBe(`run ${failed.id} goes on\n`);
    const result = parsed<RunResult>(out);
    expect(result).toMatchObject({
      id: failed.id,
      status: 'completed',
      shared: { counted: 1, checked: true, done: true },
    });
    expect((await engine.get(failed.id))?.retries).toBe(1);

    const again = await queueflow(['retry', failed.id, ...at(prefix)]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`run '${failed.id}' has completed: nothing to retry`);
  });

  it('fork starts a new run from a committed step with a patch, and names where it came from', async () => {
    const source = await engine.run(greet, { name: 'Ada' }, { params: { greeting: 'Hi' } });
    const patch = JSON.stringify([{ op: 'replace', path: '/text', value: 'Hello, Grace' }]);
    const [out, bad] = await Promise.all([
      queueflow(['fork', source.id, '--step', '1', '--patch', patch, '--flows', FLOWS, ...at(prefix)]),
      queueflow(['fork', source.id, '--step', '9', '--flows', FLOWS, ...at(prefix)]),
    ]);
    expect(out.code, out.stderr).toBe(0);
    const id = out.stdout.trim();
    expect(id).toMatch(RUN_ID);
    const forked = await engine.result(id);
    expect(forked).toMatchObject({
      status: 'completed',
      shared: { text: 'Hello, Grace!', visited: ['greet', 'sign'] },
    });
    expect((await engine.get(id))?.forkedFrom).toEqual({ runId: source.id, step: 1 });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('expected `step` to be an integer from 0 to 2, got 9');
  });

  it('workers lists the live worker; --json gives WorkerInfo', async () => {
    const [text, asJson] = await Promise.all([
      queueflow(['workers', ...at(prefix)]),
      queueflow(['workers', '--json', ...at(prefix)]),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`pid ${worker!.pid}`);
    for (const flow of ['cli-greet', 'cli-fail', 'cli-hold', 'cli-flaky']) expect(text.stdout).toContain(flow);
    const json = parsed<WorkerInfo[]>(asJson);
    expect(json).toEqual([expect.objectContaining({ pid: worker!.pid, concurrency: 4 })]);
  });

  it('list --flow and --since filter; --json gives RunSummaries; QUEUEFLOW_PREFIX is the prefix default', async () => {
    const greeted = await engine.run(greet, { name: 'Lin' }, { params: { greeting: 'Hey' } });
    const future = new Date(Date.now() + 60_000).toISOString();
    const [byFlow, sinceFuture, sinceRecent, bad, status] = await Promise.all([
      queueflow(['list', '--flow', 'cli-greet', '--json', ...at(prefix)]),
      queueflow(['list', '--since', future, '--json', ...at(prefix)]),
      queueflow(['list', '--since', '10m', '--json', ...at(prefix)]),
      refusedArguments(['list', '--since', 'yesterday', ...at(prefix)]), // an option's parser: no process
      startQueueflow(['status', greeted.id, '--redis', redisUrl()], undefined, { QUEUEFLOW_PREFIX: prefix }).exited,
    ]);
    const listed = parsed<RunSummary[]>(byFlow);
    expect(listed[0]?.id).toBe(greeted.id);
    expect(new Set(listed.map((run) => run.flow))).toEqual(new Set(['cli-greet']));
    expect(parsed<RunSummary[]>(sinceFuture)).toEqual([]);
    const recent = parsed<RunSummary[]>(sinceRecent);
    expect(recent.map((run) => run.id)).toContain(greeted.id);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("expected an ISO date or a duration such as 10m, 2h or 1d, got 'yesterday'");

    expect(status.code, status.stderr).toBe(0);
    expect(parsed<RunInfo>(status)).toMatchObject({ id: greeted.id, status: 'completed' });
  });

  it('--version prints the version', async () => {
    expect(await queueflow(['--version'])).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' });
  });

  it('purge deletes every key under the prefix with --yes, and refuses without a terminal otherwise', async () => {
    const other = testPrefix('cli-purge');
    const side = new RedisEngine({ connection: redisUrl(), flows: [greet], prefix: other });
    try {
      await side.start(greet, { name: 'Kim' }, { params: { greeting: 'Yo' } }); // no worker: stays queued
      expect((await keysUnder(redis, other)).length).toBeGreaterThan(0);
      const refused = await queueflow(['purge', ...at(other)]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`purge deletes every key under '${other}': confirm with --yes`);
      expect((await keysUnder(redis, other)).length).toBeGreaterThan(0);
      const purged = await queueflow(['purge', '--yes', ...at(other)]);
      expect(purged.code, purged.stderr).toBe(0);
      expect(purged.stdout).toMatch(new RegExp(`^deleted \\d+ keys under '${other.replace(/[{}]/g, '\\$&')}'\\n$`));
      expect(await keysUnder(redis, other)).toEqual([]);
      expect((await keysUnder(redis, prefix)).length).toBeGreaterThan(0); // another prefix is untouched
    } finally {
      await side.close();
      await deletePrefix(redisUrl(), other);
    }
  });
});
