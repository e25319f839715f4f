/**
 * `queueflow schedule add|remove|list` as a user runs them, with `--json`; `run --priority` and
 * `worker --queues` checks.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { RunInfo, ScheduleInfo } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { FLOWS, at, parsed, queueflow, refusedArguments } from './cli-harness.js';
import { greet } from './cli-flows.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';

describe('queueflow schedule', () => {
  const prefix = testPrefix('cli-schedule');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [greet], prefix });
  let workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
  });

  it('adds, lists and removes schedules, in text and with --json', async () => {
    const [nightly, poll] = await Promise.all([
      queueflow([
        'schedule',
        'add',
        'nightly',
        'cli-greet',
        '--flows',
        FLOWS,
        '--cron',
        '0 6 * * *',
        '--tz',
        'Europe/Paris',
        '--shared',
        '{"name":"Ada"}',
        '--params',
        '{"greeting":"Hi"}',
        '--priority',
        '3',
        '--json',
        ...at(prefix),
      ]),
      queueflow([
        'schedule',
        'add',
        'poll',
        'cli-greet',
        '--flows',
        FLOWS,
        '--every',
        '3600000',
        '--overlap',
        'allow',
        ...at(prefix),
      ]),
    ]);
    expect(nightly.code, nightly.stderr).toBe(0);
    expect(parsed<ScheduleInfo>(nightly)).toMatchObject({
      name: 'nightly',
      flow: 'cli-greet',
      cron: '0 6 * * *',
      tz: 'Europe/Paris',
      overlap: 'skip',
      shared: { name: 'Ada' },
      params: { greeting: 'Hi' },
      priority: 3,
      skipped: 0,
    });
    expect(poll.code, poll.stderr).toBe(0);
    expect(poll.stdout).toMatch(
      /^schedule poll added: flow cli-greet {2}every 3600000 ms {2}overlap allow {2}next \S+Z {2}last run - {2}skipped 0\n$/,
    );

    const [asJson, text] = await Promise.all([
      queueflow(['schedule', 'list', '--json', ...at(prefix)]),
      queueflow(['schedule', 'list', ...at(prefix)]),
    ]);
    const listed = parsed<ScheduleInfo[]>(asJson);
    expect(listed).toEqual(JSON.parse(JSON.stringify(await engine.schedules())));
    expect(listed.map((schedule) => schedule.name)).toEqual(['nightly', 'poll']);
    expect(text.stdout.split('\n')[0]).toMatch(
      /^nightly {2}flow cli-greet {2}cron '0 6 \* \* \*' Europe\/Paris {2}overlap skip {2}priority 3 {2}next \S+Z/,
    );

    const [removed, json] = await Promise.all([
      queueflow(['schedule', 'remove', 'nightly', ...at(prefix)]),
      queueflow(['schedule', 'remove', 'poll', '--json', ...at(prefix)]),
    ]);
    expect(removed).toMatchObject({ code: 0, stdout: 'schedule nightly removed\n' });
    expect(parsed(json)).toEqual({ name: 'poll', removed: true });
    const [again, none] = await Promise.all([
      queueflow(['schedule', 'remove', 'nightly', ...at(prefix)]),
      queueflow(['schedule', 'list', ...at(prefix)]),
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no schedule 'nightly' under prefix '${prefix}'`);
    expect(none.stdout).toContain(`no schedule under prefix '${prefix}'`);
  });

  it('refuses a schedule without exactly one of --every and --cron, or with a bad pattern', async () => {
    const args = (...extra: string[]) => ['schedule', 'add', 'bad', 'cli-greet', '--flows', FLOWS, ...extra];
    const add = (...extra: string[]) => queueflow([...args(...extra), ...at(prefix)]);
    const [neither, both, pattern, overlap] = await Promise.all([
      add(),
      add('--every', '1000', '--cron', '* * * * *'),
      add('--cron', 'every day'),
      refusedArguments([...args('--every', '1000', '--overlap', 'queue'), ...at(prefix)]), // commander's: no process
    ]);
    for (const out of [neither, both]) {
      expect(out.code).toBe(1);
      expect(out.stderr).toContain('give --every <ms> or --cron <pattern> (one of them)');
    }
    expect(pattern.code).toBe(1);
    expect(pattern.stderr).toContain('schedule: expected `cron` to be a cron pattern');
    expect(overlap.code).toBe(1);
    expect(overlap.stderr).toContain('Allowed choices are skip, allow');
    expect(await engine.schedules()).toEqual([]);
  });

  it('a schedule added by the CLI starts runs on the workers', async () => {
    workers = [await spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix })];
    const added = await queueflow([
      'schedule',
      'add',
      'fast',
      'cli-greet',
      '--flows',
      FLOWS,
      '--every',
      '1000',
      '--shared',
      '{"name":"Ada"}',
      '--params',
      '{"greeting":"Hi"}',
      ...at(prefix),
    ]);
    expect(added.code, added.stderr).toBe(0);
    const runId = await waitFor('a run of the schedule', async () => (await engine.schedules())[0]?.lastRunId);
    const result = await engine.result(runId);
    expect(result).toMatchObject({ status: 'completed', shared: { name: 'Ada', text: 'Hi, Ada!' } });
    expect((await queueflow(['schedule', 'remove', 'fast', ...at(prefix)])).code).toBe(0);
  });

  it('run --priority and worker --queues check their values', async () => {
    const [run, text, started, worker] = await Promise.all([
      // Refused by the options' parsers: parsed in this process (cli-harness.ts).
      refusedArguments(['run', 'cli-greet', '--flows', FLOWS, '--priority', '0', '--detach', ...at(prefix)]),
      refusedArguments(['run', 'cli-greet', '--flows', FLOWS, '--priority', 'abc', '--detach', ...at(prefix)]),
      queueflow(['run', 'cli-greet', '--flows', FLOWS, '--priority', '5', '--detach', ...at(prefix)]),
      refusedArguments(['worker', '--flows', FLOWS, '--queues', 'default,l:lm', ...at(prefix)]),
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('expected `--priority` to be an integer from 1 (runs first) to 2097151');
    expect(text.code).toBe(1);
    expect(text.stderr).toContain('got "abc" (string)');
    expect(started.code, started.stderr).toBe(0);
    const info = (await engine.get(started.stdout.trim())) as RunInfo;
    expect(info.priority).toBe(5);
    expect(worker.code).toBe(1);
    expect(worker.stderr).toContain('--queues: expected `each name` to be a queue name');
  });
});
