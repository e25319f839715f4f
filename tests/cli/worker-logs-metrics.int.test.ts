/**
 * `queueflow worker` logs through pino and serves metrics (issue 31): `--log-format json` prints
 * one JSON object per line, and every line about a try of a step names its run, step, node,
 * attempt and worker; `--metrics-port` answers `/metrics` in Prometheus' text format with
 * queueflow's series, queue depth and budget use included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { FLOWS } from './cli-harness.js';
import { fail, greet, metered } from './cli-flows.js';
import { freePort } from '../support/redis-server.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';

type Line = Record<string, unknown> & { level: number; msg: string };

describe('queueflow worker --log-format json --metrics-port', () => {
  const prefix = testPrefix('cli-logs');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [greet, fail, metered], prefix });
  let worker: WorkerProcess;
  let port: number;
  const lines = (): Line[] =>
    worker
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Line);

  beforeAll(async () => {
    port = await freePort();
    worker = await spawnWorker({
      flows: FLOWS,
      redisUrl: redisUrl(),
      prefix,
      args: [
        '--log-format',
        'json',
        '--log-level',
        'debug',
        '--metrics-port',
        String(port),
        '--metrics-host',
        '127.0.0.1',
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await engine.close();
    await stopWorkers([worker]);
    await deletePrefix(redisUrl(), prefix);
  });

  it('prints JSON lines; each about a try names runId, step, node, attempt and worker', async () => {
    const ok = await engine.run(greet, { name: 'Ada' }, { params: { greeting: 'Hi' } });
    const failed = await engine.run(fail, {}, { params: { reason: 'logged' } });
    expect([ok.status, failed.status]).toEqual(['completed', 'failed']);
    // Every line of stdout is a JSON object (the ready line first).
    const text = worker.output().trim().split('\n');
    expect(text.every((line) => line.startsWith('{'))).toBe(true);
    const ready = lines().find((line) => line.msg.includes(': ready on '));
    expect(ready).toMatchObject({ level: 30, prefix, partitions: 1, queues: ['default'], concurrency: 8 });
    await waitFor('the last try of the run logged', () =>
      lines().some((line) => line.runId === ok.id && line.outcome === 'completed'),
    );
    const ofRun = lines().filter((line) => line.runId === ok.id);
    expect(ofRun.map((line) => [line.node, line.step, line.outcome ?? 'started'])).toEqual([
      ['greet', 0, 'started'],
      ['greet', 0, 'next'],
      ['sign', 1, 'started'],
      ['sign', 1, 'completed'],
    ]);
    for (const line of ofRun) {
      expect(line).toMatchObject({ flow: 'cli-greet', attempt: 0, worker: expect.stringMatching(/:\d+$/) as unknown });
    }
    // A try's line is written as its span ends, which may come after the client hears of the end.
    const failure = await waitFor('the failed try logged', () =>
      lines().find((line) => line.runId === failed.id && line.outcome === 'failed'),
    );
    expect(failure).toMatchObject({ level: 40, node: 'explode', step: 0, attempt: 0 });
    expect(failure!.msg).toMatch(/boom: logged/);
  });

  it('serves /metrics in Prometheus text format: steps, queue depth and budget use', async () => {
    const parent = await engine.start(metered, {});
    try {
      const text = await waitFor('the metered budget on /metrics with two waiting', async () => {
        const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return /^queueflow_budget_waiting\{queueflow_budget="cli-metered",[^}]*\} 2$/m.test(body) ? body : undefined;
      });
      expect(text).toMatch(/^queueflow_steps_started_total\{queueflow_flow="cli-greet",queueflow_node="greet",/m);
      expect(text).toMatch(/^queueflow_queue_depth\{[^}]*\} \d+$/m);
      expect(text).toMatch(/^queueflow_budget_rate_max\{queueflow_budget="cli-metered",[^}]*\} 1$/m);
      expect(text).toMatch(/^queueflow_budget_window_units\{queueflow_budget="cli-metered",[^}]*\} 1$/m);
    } finally {
      await engine.cancel(parent.id);
    }
  });
});
