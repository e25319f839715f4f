/**
 * The `queueflow` command as a user runs it: the built CLI (packages/worker/dist/cli.js) in child
 * processes against the suite's Redis, each describe under a key prefix of its own. Exit codes
 * and output are checked exactly; bad input must fail with an error naming the bad value, write
 * nothing to Redis, and never hang (every process is killed after a deadline, failing the test).
 * Arguments that commander refuses are parsed in this process (refusedArguments), but for one
 * (`run --shared` that is not JSON) whose process shows the exit code and usage as a user sees them.
 */
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunInfo, RunResult } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import {
  FLOWS,
  FLOWS_SOURCE,
  MISSING_FLOWS,
  NO_FLOWS,
  RUN_ID,
  at,
  expectJsonOutput,
  firstLine,
  parsed,
  pretty,
  queueflow,
  refusedArguments,
  startQueueflow,
} from './cli-harness.js';
import { compiledModule } from '../support/compiled-module.js';
import { keysUnder } from '../support/redis-prefix.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { untilRun, waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';

const redis = new Redis(redisUrl(), { maxRetriesPerRequest: 1 });
redis.on('error', () => {});
const prefixes: string[] = [];

/** A prefix of this file's, deleted after the file. */
function prefixFor(name: string): string {
  const prefix = testPrefix(`cli-${name}`);
  prefixes.push(prefix);
  return prefix;
}

afterAll(async () => {
  redis.disconnect();
  await Promise.all(prefixes.map((prefix) => deletePrefix(redisUrl(), prefix)));
});

describe('queueflow run, status, wait, cancel, send, graph with a worker', () => {
  const prefix = prefixFor('runs');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], prefix }); // to see when a run has parked
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    worker = await spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4 });
  }, 120_000);

  afterAll(async () => {
    await engine.close();
    await stopWorkers(worker ? [worker] : []);
  });

  // One run for both: each command is a process (~0.7 s of CPU).
  it('run prints the RunResult (completed, final shared, last action) and exits 0; cancel of it then says it has ended', async () => {
    const out = await queueflow([
      'run',
      'cli-greet',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--shared',
      '{"name":"Ada"}',
      '--params',
      '{"greeting":"Hello"}',
    ]);
    const result = parsed<RunResult>(out);
    expect(result).toEqual({
      id: expect.stringMatching(RUN_ID),
      status: 'completed',
      shared: { name: 'Ada', text: 'Hello, Ada!', visited: ['greet', 'sign'] },
      lastAction: 'signed',
    });
    expect(out).toEqual({ code: 0, stdout: pretty(result), stderr: `run ${result.id} started\n` });

    // Cancel of a run that has ended says so and leaves it as it is.
    expect(await queueflow(['cancel', result.id, ...at(prefix)])).toEqual({
      code: 0,
      stdout: `run ${result.id} has already ended (completed): nothing to cancel\n`,
      stderr: '',
    });
    expect((await engine.get(result.id))?.status).toBe('completed');
  });

  it('run of a failing flow prints status failed with the error and exits 1', async () => {
    const out = await queueflow([
      'run',
      'cli-fail',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--shared',
      '{"before":true}',
      '--params',
      '{"reason":"bad input"}',
    ]);
    const result = parsed<RunResult>(out);
    expect(result).toEqual({
      id: expect.stringMatching(RUN_ID),
      status: 'failed',
      shared: { before: true },
      error: { name: 'Error', message: 'boom: bad input', code: 'NODE_FAILED', node: 'explode', attempts: 1 },
    });
    expect(out).toEqual({ code: 1, stdout: pretty(result), stderr: `run ${result.id} started\n` });
  });

  it('run --detach prints only the run id; status prints its RunInfo; wait prints its result', async () => {
    const detached = await queueflow([
      'run',
      'cli-greet',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--detach',
      '--shared',
      '{"name":"Bo"}',
      '--params',
      '{"greeting":"Hi"}',
    ]);
    expect(detached).toEqual({ code: 0, stdout: expect.stringMatching(/^[0-9A-Za-z]{21}\n$/), stderr: '' });
    const id = detached.stdout.trim();

    // Right away the run may be anywhere between queued and completed.
    const early = await queueflow(['status', id, ...at(prefix)]);
    expect(early.code, early.stderr).toBe(0);
    expectJsonOutput(early);
    expect(parsed<RunInfo>(early)).toMatchObject({ id, flow: 'cli-greet' });
    expect(['queued', 'running', 'completed']).toContain(parsed<RunInfo>(early).status);

    const waited = await queueflow(['wait', id, ...at(prefix)]);
    expect(waited).toEqual({
      code: 0,
      stdout: pretty({
        id,
        status: 'completed',
        shared: { name: 'Bo', text: 'Hi, Bo!', visited: ['greet', 'sign'] },
        lastAction: 'signed',
      }),
      stderr: '',
    });

    const done = await queueflow(['status', id, ...at(prefix)]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr).toBe('');
    expectJsonOutput(done);
    const info = parsed<RunInfo>(done);
    expect(info).toMatchObject({
      id,
      flow: 'cli-greet',
      status: 'completed',
      steps: 2,
      attempts: 0,
      lastAction: 'signed',
      errors: [],
      conflicts: [],
    });
    expect(info.shared).toEqual({ name: 'Bo', text: 'Hi, Bo!', visited: ['greet', 'sign'] });
    expect(info.finishedAt).toBeGreaterThanOrEqual(info.createdAt);
    expect(info).toEqual(JSON.parse(JSON.stringify(await engine.get(id))));
  });

  it('cancel of a run parked on a mailbox: wait then reports it cancelled and exits 1', async () => {
    const detached = await queueflow([
      'run',
      'cli-hold',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--detach',
      '--params',
      '{"address":"cancel-desk"}',
    ]);
    expect(detached.code, detached.stderr).toBe(0);
    const id = detached.stdout.trim();
    await untilRun(engine, id, 'the run to park on its mailbox', (info) => info.status === 'waiting');
    const parked = await queueflow(['status', id, ...at(prefix)]);
    expect(parked.code, parked.stderr).toBe(0);
    expect(parsed<RunInfo & { waitingOn: unknown }>(parked)).toMatchObject({
      status: 'waiting',
      waitingOn: { mailbox: 'cancel-desk', since: expect.any(Number) as unknown, deadline: null },
    });

    expect(await queueflow(['cancel', id, ...at(prefix)])).toEqual({
      code: 0,
      stdout: `cancel requested for run ${id}\n`,
      stderr: '',
    });
    expect(await queueflow(['wait', id, ...at(prefix)])).toEqual({
      code: 1,
      stdout: pretty({ id, status: 'cancelled', shared: {} }),
      stderr: '',
    });
    // What `status` prints is the engine's RunInfo (the --detach test): read here without a process.
    expect(await engine.get(id)).toMatchObject({ id, flow: 'cli-hold', status: 'cancelled', steps: 0 });
  });

  it('send releases a run waiting on that address', async () => {
    const detached = await queueflow([
      'run',
      'cli-hold',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--detach',
      '--params',
      '{"address":"send-desk"}',
    ]);
    expect(detached.code, detached.stderr).toBe(0);
    const id = detached.stdout.trim();
    await untilRun(engine, id, 'the run to park on its mailbox', (info) => info.status === 'waiting');

    const sent = await queueflow(['send', 'send-desk', '{"answer":42,"by":"cli"}', ...at(prefix)]);
    expect(sent).toEqual({ code: 0, stdout: expect.stringMatching(/^m\.[\w-]{21}\n$/), stderr: '' });
    const messageId = sent.stdout.trim(); // the id the receiving run sees
    expect(await queueflow(['wait', id, ...at(prefix)])).toEqual({
      code: 0,
      stdout: pretty({
        id,
        status: 'completed',
        shared: { got: { answer: 42, by: 'cli' }, gotId: messageId },
        lastAction: 'released',
      }),
      stderr: '',
    });
  });

  it('wait --timeout gives up on a run that has not ended: exit 124, the run goes on', async () => {
    const detached = await queueflow([
      'run',
      'cli-hold',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--detach',
      '--params',
      '{"address":"timeout-desk"}',
    ]);
    expect(detached.code, detached.stderr).toBe(0);
    const id = detached.stdout.trim();
    await untilRun(engine, id, 'the run to park on its mailbox', (info) => info.status === 'waiting');

    const timedOut = await queueflow(['wait', id, '--timeout', '300', ...at(prefix)]);
    expect(timedOut).toEqual({
      code: 124,
      stdout: '',
      stderr: `queueflow: run ${id} has not ended after 300 ms (status waiting); it goes on without this command\n`,
    });
    expect((await engine.get(id))?.status).toBe('waiting');
    // A run that ends in time: the result and its exit code, as without --timeout. (The send
    // command has a test of its own.)
    await engine.send('timeout-desk', 'go');
    const waited = await queueflow(['wait', id, '--timeout', '60000', ...at(prefix)]);
    expect(waited.code, waited.stderr).toBe(0);
    expect(parsed<RunResult>(waited)).toMatchObject({ id, status: 'completed', shared: { got: 'go' } });
    const zero = await refusedArguments(['wait', id, '--timeout', '0', ...at(prefix)]);
    expect(zero.code).toBe(1);
    expect(firstLine(zero.stderr)).toBe(
      "error: option '--timeout <ms>' argument '0' is invalid. expected an integer from 1 and up, got '0'",
    );
  });

  it('status summarises a large shared (keys and sizes); --shared prints it whole', async () => {
    const big = { name: 'Big', blob: 'x'.repeat(5000), list: Array.from({ length: 1000 }, (_, i) => i) };
    const done = parsed<RunResult>(
      await queueflow([
        'run',
        'cli-greet',
        '--flows',
        FLOWS,
        ...at(prefix),
        '--shared',
        JSON.stringify(big),
        '--params',
        '{"greeting":"Hello"}',
      ]),
    );
    expect(done.status).toBe('completed');
    const [status, whole] = await Promise.all([
      queueflow(['status', done.id, ...at(prefix)]),
      queueflow(['status', done.id, '--shared', ...at(prefix)]),
    ]);
    expect(status.code, status.stderr).toBe(0);
    expectJsonOutput(status);
    expect(status.stdout.length).toBeLessThan(3000);
    const info = parsed<RunInfo>(status);
    const bytes = JSON.stringify(done.shared).length;
    expect(info.shared).toEqual({
      '(summary)': `${bytes} bytes of JSON in 5 keys: too large to print here; \`queueflow status ${done.id} --prefix '${prefix}' --shared\` prints it whole`,
      name: 'Big',
      blob: '(string: 5002 bytes)',
      list: `(array: 1000 items, ${JSON.stringify(big.list).length} bytes)`,
      text: 'Hello, Big!',
      visited: ['greet', 'sign'],
    });
    expect(whole.code, whole.stderr).toBe(0);
    expect(parsed<RunInfo>(whole)).toEqual(JSON.parse(JSON.stringify(await engine.get(done.id))));
    expect(parsed<RunInfo>(whole).shared).toEqual(done.shared);
  });

  it('graph prints the flow as a Mermaid flowchart (needs no Redis)', async () => {
    const expected = [
      'flowchart TD',
      '  subgraph n0["cli-greet (flow)"]',
      '    n1["greet"]',
      '    n2["sign"]',
      '  end',
      '  start((start)) --> n1',
      '  n1 -->|"greeted"| n2',
      '',
    ].join('\n');
    const [td, lr] = await Promise.all([
      queueflow(['graph', 'cli-greet', '--flows', FLOWS]),
      queueflow(['graph', 'cli-greet', '--flows', FLOWS, '--direction', 'LR']),
    ]);
    expect(td).toEqual({
      code: 0,
      stdout: expected,
      stderr: '',
    });
    expect(lr).toEqual({
      code: 0,
      stdout: expected.replace('flowchart TD', 'flowchart LR'),
      stderr: '',
    });
  });
});

describe('queueflow run with no worker', () => {
  const prefix = prefixFor('no-worker');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], prefix });
  afterAll(() => engine.close());

  // What it says after 10 s still queued (no worker has taken the run, how to start one) is
  // packages/worker/test/await-result.test.ts's, on a fake clock: here, Ctrl-C as soon as it waits.
  it('Ctrl-C leaves the run queued and says how to cancel it', async () => {
    const cli = startQueueflow(['run', 'cli-greet', '--flows', FLOWS, ...at(prefix), '--shared', '{"name":"Cy"}']);
    // Its Ctrl-C handler is set before it says the run started (await-result.test.ts): said first,
    // a command preempted between the two died of this SIGINT on a busy machine.
    const id = await waitFor('the run to start', () => /^run (\S+) started\n/.exec(cli.output().stderr)?.[1]);
    cli.signal('SIGINT');
    const out = await cli.exited;
    // Its stderr on failure: once this died of the SIGINT itself (-1), as if its wait had ended.
    expect(out.code, `stderr: ${out.stderr}`).toBe(130);
    expect(
      out.stderr.endsWith(
        `\ninterrupted: run ${id} goes on without this command; \`queueflow cancel ${id} --prefix '${prefix}'\` stops it\n`,
      ),
    ).toBe(true);
    expect((await engine.get(id))?.status).toBe('queued');
    await engine.cancel(id);
  }, 120_000);
});

describe('queueflow list', () => {
  const prefix = prefixFor('list');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], prefix });
  let worker: WorkerProcess | undefined;
  /** One line of `list` for run `id`, as the engine has it now. */
  const line = async (id: string): Promise<string> => {
    const info = (await engine.get(id))!;
    const created = new Date(info.createdAt).toISOString();
    return `${id}  ${info.flow}  ${info.status.padEnd(9)}  steps ${info.steps}  ${created}${info.error ? `  ${info.error.message}` : ''}`;
  };
  const ids: { greet: string; fail: string; hold: string } = { greet: '', fail: '', hold: '' };

  beforeAll(async () => {
    worker = await spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 2 });
    // Three runs, one after the other (newest last): completed, failed, parked on a mailbox.
    const greet = await queueflow([
      'run',
      'cli-greet',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--shared',
      '{"name":"Cy"}',
      '--params',
      '{"greeting":"Yo"}',
    ]);
    ids.greet = parsed<RunResult>(greet).id;
    const fail = await queueflow([
      'run',
      'cli-fail',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--params',
      '{"reason":"listed"}',
    ]);
    ids.fail = parsed<RunResult>(fail).id;
    const hold = await queueflow([
      'run',
      'cli-hold',
      '--flows',
      FLOWS,
      ...at(prefix),
      '--detach',
      '--params',
      '{"address":"list-desk"}',
    ]);
    ids.hold = hold.stdout.trim();
    await untilRun(engine, ids.hold, 'the run to park on its mailbox', (info) => info.status === 'waiting');
  }, 120_000);

  afterAll(async () => {
    await engine.close();
    await stopWorkers(worker ? [worker] : []);
  });

  it('lists the runs newest first: id, flow, status, steps, creation time, error', async () => {
    const expected = [await line(ids.hold), await line(ids.fail), await line(ids.greet)];
    // The CLI's columns as printed, spaces and all.
    /* eslint-disable no-regex-spaces */
    expect(expected[0]).toMatch(/  cli-hold  waiting    steps 0  /);
    expect(expected[1]).toMatch(/  cli-fail  failed     steps 0  .*Z  boom: listed$/);
    expect(expected[2]).toMatch(/  cli-greet  completed  steps 2  /);
    /* eslint-enable no-regex-spaces */
    expect(await queueflow(['list', ...at(prefix)])).toEqual({
      code: 0,
      stdout: `${expected.join('\n')}\n`,
      stderr: '',
    });
  });

  it('--status keeps the runs with that status; --limit keeps the newest', async () => {
    const [listFailed, listCompleted, listCancelled, limited, both] = await Promise.all([
      queueflow(['list', '--status', 'failed', ...at(prefix)]),
      queueflow(['list', '--status', 'completed', ...at(prefix)]),
      queueflow(['list', '--status', 'cancelled', ...at(prefix)]),
      queueflow(['list', '--limit', '2', ...at(prefix)]),
      queueflow(['list', '--status', 'waiting', '--limit', '1', ...at(prefix)]),
    ]);
    expect(listFailed).toEqual({ code: 0, stdout: `${await line(ids.fail)}\n`, stderr: '' });
    expect(listCompleted).toEqual({ code: 0, stdout: `${await line(ids.greet)}\n`, stderr: '' });
    expect(listCancelled).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(limited).toEqual({ code: 0, stdout: `${await line(ids.hold)}\n${await line(ids.fail)}\n`, stderr: '' });
    expect(both).toEqual({ code: 0, stdout: `${await line(ids.hold)}\n`, stderr: '' });
  });

  it("the worker's ready line names its Redis, prefix, partitions, queues, flows and concurrency", () => {
    // Not on a terminal, the worker logs JSON lines (pino): the line's text is its `msg`.
    const line = worker!
      .output()
      .split('\n')
      .find((text) => text.includes(': ready'));
    const ready = (JSON.parse(line!) as { msg: string }).msg;
    expect(ready).toMatch(
      new RegExp(
        `^queueflow worker \\d+: ready on redis://127\\.0\\.0\\.1:\\d+\\S* \\(prefix '${prefix.replace(/[{}]/g, '\\$&')}'; ` +
          'partitions: 1, all served; queues: default; flows: .*cli-greet.*; concurrency 2\\)$',
      ),
    );
  });

  it('--status throttled lists the fan-out children waiting for a budget, naming the key and parent', async () => {
    const started = await queueflow(['run', 'cli-metered', '--flows', FLOWS, ...at(prefix), '--detach']);
    const parent = started.stdout.trim();
    try {
      const waiting = await waitFor('two children waiting for the budget', async () => {
        const budget = (await engine.budgets()).find((b) => b.key === 'cli-metered');
        return budget?.waiting.length === 2 ? budget.waiting : undefined;
      });
      const listed = await queueflow(['list', '--status', 'throttled', ...at(prefix)]);
      expect(listed.code, listed.stderr).toBe(0);
      const lines = listed.stdout.trim().split('\n');
      expect(lines).toHaveLength(2);
      for (const id of waiting) {
        expect(lines.find((l) => l.startsWith(`${id}  `))).toMatch(
          new RegExp(`throttled  steps \\d+  .*Z  by 'cli-metered'  child of ${parent}$`),
        );
      }
      // The parent holds no worker while its children run, but its work goes on: it reads running.
      const [status, all] = await Promise.all([
        queueflow(['status', parent, ...at(prefix)]),
        queueflow(['list', ...at(prefix)]),
      ]);
      expect(parsed<RunInfo>(status)).toMatchObject({ status: 'running', children: { total: 3 } });
      expect(all.stdout.split('\n').find((l) => l.startsWith(`${parent}  `))).toMatch(
        /^\S+ {2}cli-metered {2}running {4}steps \d+ {2}\S+Z {2}fan-out [01] of 3 children ended$/,
      );
    } finally {
      await engine.cancel(parent);
    }
  });

  it('rejects a status or limit that is not one', async () => {
    const [badStatus, badLimit] = await Promise.all([
      refusedArguments(['list', '--status', 'done', ...at(prefix)]),
      refusedArguments(['list', '--limit', '0', ...at(prefix)]),
    ]);
    expect(badStatus.code).toBe(1);
    expect(badStatus.stdout).toBe('');
    expect(firstLine(badStatus.stderr)).toBe(
      "error: option '--status <status>' argument 'done' is invalid. Allowed choices are queued, running, waiting, throttled, completed, failed, cancelled.",
    );
    expect(badLimit.code).toBe(1);
    expect(badLimit.stdout).toBe('');
    expect(firstLine(badLimit.stderr)).toBe(
      "error: option '--limit <n>' argument '0' is invalid. expected an integer from 1 and up, got '0'",
    );
  });
});

describe.concurrent('queueflow with bad input: a clear error, a non-zero exit, nothing written to Redis', () => {
  it('run of an unknown flow names it and the flows the module has', async () => {
    const prefix = prefixFor('unknown-flow');
    expect(await queueflow(['run', 'nope', '--flows', FLOWS, ...at(prefix)])).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "queueflow: unknown flow 'nope'; registered: 'cli-fail', 'cli-flaky', 'cli-greet', 'cli-hold', 'cli-metered'\n",
    });
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('run --shared that is not JSON', async () => {
    const prefix = prefixFor('shared-not-json');
    const out = await queueflow(['run', 'cli-greet', '--flows', FLOWS, ...at(prefix), '--shared', 'not json']);
    expect(out.code).toBe(1);
    expect(out.stdout).toBe('');
    // The rest of the line is V8's JSON.parse message.
    expect(firstLine(out.stderr)).toMatch(
      /^error: option '--shared <json>' argument 'not json' is invalid\. not JSON: .+/,
    );
    expect(out.stderr).toContain('Usage: queueflow run [options] <flow>');
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('run --shared or --params that is JSON but not an object', async () => {
    const prefix = prefixFor('shared-array');
    const [array, nullParams] = await Promise.all([
      refusedArguments(['run', 'cli-greet', '--flows', FLOWS, ...at(prefix), '--shared', '[1]']),
      refusedArguments(['run', 'cli-greet', '--flows', FLOWS, ...at(prefix), '--params', 'null']),
    ]);
    expect(array.code).toBe(1);
    expect(array.stdout).toBe('');
    expect(firstLine(array.stderr)).toBe(
      "error: option '--shared <json>' argument '[1]' is invalid. expected a JSON object",
    );
    expect(nullParams.code).toBe(1);
    expect(nullParams.stdout).toBe('');
    expect(firstLine(nullParams.stderr)).toBe(
      "error: option '--params <json>' argument 'null' is invalid. expected a JSON object",
    );
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('worker --concurrency 0 or abc', async () => {
    const prefix = prefixFor('concurrency');
    const [zero, abc] = await Promise.all(
      ['0', 'abc'].map((value) =>
        refusedArguments(['worker', '--flows', FLOWS, ...at(prefix), '--concurrency', value]),
      ),
    );
    for (const [out, value] of [
      [zero!, '0'],
      [abc!, 'abc'],
    ] as const) {
      expect(out.code).toBe(1);
      expect(out.stdout).toBe('');
      expect(firstLine(out.stderr)).toBe(
        `error: option '--concurrency <n>' argument '${value}' is invalid. expected an integer from 1 and up, got '${value}'`,
      );
      expect(out.stderr).toContain('Usage: queueflow worker [options]');
    }
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('a --flows module that does not exist', async () => {
    const prefix = prefixFor('missing-module');
    const [run, worker] = await Promise.all([
      queueflow(['run', 'cli-greet', '--flows', MISSING_FLOWS, ...at(prefix)]),
      queueflow(['worker', '--flows', MISSING_FLOWS, ...at(prefix)]),
    ]);
    for (const out of [run, worker]) {
      expect(out.code).toBe(1);
      expect(out.stdout).toBe('');
      expect(out.stderr).toBe(
        `queueflow: cannot import flows module '${MISSING_FLOWS}': no such file under ${process.cwd()}\n`,
      );
    }
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('a --flows path that is a directory', async () => {
    const directory = fileURLToPath(new URL('.', import.meta.url)).replace(/\/$/, '');
    expect(await queueflow(['graph', 'cli-greet', '--flows', directory])).toEqual({
      code: 1,
      stdout: '',
      stderr: `queueflow: flows module '${directory}' is a directory: pass the module file that exports the flows (e.g. dist/flows.js)\n`,
    });
  });

  it('a --flows module that exports no flow', async () => {
    const prefix = prefixFor('no-flow');
    const expected = (module: string) => ({
      code: 1,
      stdout: '',
      stderr: `queueflow: flows module '${module}' exports no flow: export the results of defineFlow(name, build) (or of defineAgent)\n`,
    });
    // The TypeScript module through tsx for one command (~0.4 s of CPU more a process), compiled for the others.
    const compiled = compiledModule(NO_FLOWS);
    const [run, worker, graph] = await Promise.all([
      queueflow(['run', 'cli-greet', '--flows', compiled, ...at(prefix)]),
      queueflow(['worker', '--flows', compiled, ...at(prefix)]),
      queueflow(['graph', 'cli-greet', '--flows', NO_FLOWS]),
    ]);
    expect(run).toEqual(expected(compiled));
    expect(worker).toEqual(expected(compiled));
    expect(graph).toEqual(expected(NO_FLOWS));
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('studio beyond loopback without a token is refused, naming --token and --no-token', async () => {
    const out = await queueflow(['studio', '--host', '0.0.0.0', '--port', '0']);
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(
      /^queueflow: refusing to listen on 0\.0\.0\.0 without a token: .* --no-token to listen without one on purpose\n$/,
    );
  });

  it('graph of a flow the TypeScript module does not have (loaded through tsx)', async () => {
    expect(await queueflow(['graph', 'nope', '--flows', FLOWS_SOURCE])).toEqual({
      code: 1,
      stdout: '',
      stderr: `queueflow: flows module '${FLOWS_SOURCE}' has no flow 'nope' (it has: cli-fail, cli-flaky, cli-greet, cli-hold, cli-metered)\n`,
    });
  });

  it('send of a body that is not JSON fails before connecting', async () => {
    const prefix = prefixFor('send-not-json');
    const out = await refusedArguments(['send', 'desk', 'not json', ...at(prefix)]);
    expect(out.code).toBe(1);
    expect(out.stdout).toBe('');
    expect(firstLine(out.stderr)).toMatch(
      /^error: command-argument value 'not json' is invalid for argument 'json'\. not JSON: .+/,
    );
    expect(out.stderr).toContain('Usage: queueflow send [options] <address> <json>');
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  // A mistyped prefix must not leave keys behind: the client's queue skips BullMQ's meta write.
  it('status, wait and cancel of an unknown run id (wait does not hang: RUN_NOT_FOUND); these and list write no key at all', async () => {
    const prefix = prefixFor('unknown-id');
    const [status, wait, cancel, list] = await Promise.all([
      queueflow(['status', 'no-such-run', ...at(prefix)]),
      queueflow(['wait', 'no-such-run', ...at(prefix)]),
      queueflow(['cancel', 'no-such-run', ...at(prefix)]),
      queueflow(['list', ...at(prefix)]),
    ]);
    expect(status).toEqual({
      code: 1,
      stdout: '',
      stderr: `queueflow: no run 'no-such-run' under prefix '${prefix}' (never started, or expired)\n`,
    });
    expect(wait).toEqual({
      code: 1,
      stdout: '',
      stderr: `queueflow: no run 'no-such-run' under prefix '${prefix}' (never started, or expired)\n`,
    });
    expect(cancel).toEqual({
      code: 1,
      stdout: '',
      stderr: `queueflow: no run 'no-such-run' under prefix '${prefix}'\n`,
    });
    expect(list).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it('an unreachable --redis: status and wait fail, naming the Redis and the cause (no retrying forever)', async () => {
    const [status, wait] = await Promise.all([
      queueflow(['status', 'some-run', '--redis', 'redis://127.0.0.1:1']),
      queueflow(['wait', 'some-run', '--redis', 'redis://127.0.0.1:1']),
    ]);
    const expected = {
      code: 1,
      stdout: '',
      stderr: 'queueflow: cannot connect to Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1\n',
    };
    expect(status).toEqual(expected);
    expect(wait).toEqual(expected); // a command that retried forever would be killed at its deadline: a hang fails above
  });

  it('a --redis database the server does not have: run, worker and purge fail, naming it, and touch nothing', async () => {
    const prefix = prefixFor('no-db');
    const url = new URL(redisUrl());
    url.pathname = '/999'; // ioredis would go on in database 0 after the server refused to SELECT it
    const [run, worker, purge] = await Promise.all([
      queueflow(['run', 'cli-greet', '--flows', FLOWS, '--redis', url.href, '--prefix', prefix, '--detach']),
      queueflow(['worker', '--flows', FLOWS, '--redis', url.href, '--prefix', prefix]),
      queueflow(['purge', '--yes', '--redis', url.href, '--prefix', prefix]), // would purge database 0
    ]);
    for (const out of [run, worker, purge]) {
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(
        /^queueflow: Redis at redis:\/\/\S+ has no database 999 .*: ERR DB index is out of range\n$/,
      );
    }
    expect(await keysUnder(redis, prefix)).toEqual([]); // nothing in database 0 either
  });

  it('an unreachable --redis for a worker with --exit-on-unreachable: it exits with one line naming the Redis and the cause', async () => {
    // Without the flag it waits for Redis (tests/redis/worker-waits-for-redis.int.test.ts).
    expect(
      await queueflow(['worker', '--flows', FLOWS, '--redis', 'redis://127.0.0.1:1', '--exit-on-unreachable']),
    ).toEqual({
      code: 1,
      stdout: '',
      stderr: 'queueflow: cannot connect to Redis at redis://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1\n',
    });
  });

  it('an unreachable --redis with a password: the password is not printed', async () => {
    const out = await queueflow(['list', '--redis', 'redis://someone:s3cret@127.0.0.1:1']);
    expect(out).toEqual({
      code: 1,
      stdout: '',
      stderr: 'queueflow: cannot connect to Redis at redis://someone@127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1\n',
    });
  });
});
