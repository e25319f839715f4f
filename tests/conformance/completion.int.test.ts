/**
 * Contract: completion that cannot hang (DESIGN "Clients"). `result()` resolves also for a run
 * that ended before the caller began to wait, and for 1,000 runs awaited at once; `get` answers
 * for finished runs. How long finished runs are kept is each engine's own: LocalEngine keeps the
 * last `retainFinishedRuns`, RedisEngine lets its records expire after the retention; RedisEngine
 * awaits runs over a small, constant number of connections.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { redisUrl } from '../support/test-redis.js';
import { waitFor, within } from '../support/wait-for.js';
import { engines, useEngine, useLocalEngine } from './engine-harness.js';

type S = Record<string, any>;

class Double extends Node<S> {
  override prep(shared: S): number {
    return shared.n as number;
  }
  override exec(n: number): number {
    return n * 2;
  }
  override post(shared: S, _prepRes: unknown, doubled: number): void {
    shared.doubled = doubled;
  }
}

class Boom extends Node<S> {
  override exec(): never {
    throw new Error('boom');
  }
}

let hold = gate();
/** Waits for {@link hold} when `shared.hold` is set. */
class Held extends Node<S> {
  override prep(shared: S): boolean {
    return shared.hold === true;
  }
  override async exec(wait: boolean): Promise<void> {
    if (wait) await hold.promise;
  }
  override post(shared: S): void {
    shared.done = true;
  }
}

const double = defineFlow('double', () => new Flow(new Double({ name: 'double' })));
const boom = defineFlow('boom', () => new Flow(new Boom({ name: 'boom', maxRetries: 2 })));
const held = defineFlow('held', () => new Flow(new Held({ name: 'held' })));
const flows = [double, boom, held];

describe.each(engines)('%s: completion that cannot hang', (name) => {
  const setup = useEngine(name);

  it('result() resolves for a run that ended before the caller began to wait', async () => {
    const { engine, until, redis } = await setup('ended-before', { flows });
    const handle = await engine.start(double, { n: 21 });
    await until(handle.id, 'the run to complete', (info) => info.status === 'completed');

    const result = await within(handle.result(), 30_000, 'result() hung for a run that had already ended');
    expect(result).toMatchObject({ id: handle.id, status: 'completed', shared: { n: 21, doubled: 42 } });

    if (redis) {
      // A client that never saw the run start (another process, say) gets the same answer.
      const other = redis.client();
      const again = await within(other.result(handle.id), 30_000, 'result() hung on a fresh client');
      expect(again).toEqual(result);
    }
  });

  it('resolves 1,000 runs awaited at once', async () => {
    const { engine } = await setup('thousand-results', { flows, concurrency: 50 });
    const handles = await Promise.all(Array.from({ length: 1000 }, (_, i) => engine.start(held, { i })));
    const results = await Promise.all(handles.map((handle) => handle.result()));
    expect(results.filter((result) => result.status === 'completed')).toHaveLength(1000);
    expect(results.map((result) => result.shared.i)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('get() answers for finished runs, completed and failed, and for no unknown run', async () => {
    const { engine } = await setup('finished', { flows });
    const completed = await engine.run(double, { n: 1 });
    const failed = await engine.run(boom, {});
    expect(completed.status).toBe('completed');
    expect(failed.status).toBe('failed');

    expect(await engine.get(completed.id)).toMatchObject({ status: 'completed', shared: { n: 1, doubled: 2 } });
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed', error: { node: 'boom', attempts: 2 } });
    expect(await engine.get('no-such-run')).toBeUndefined();
  });
});

describe('LocalEngine: finished runs kept in memory', () => {
  const setup = useLocalEngine();

  it('get() answers for finished runs within retainFinishedRuns, the oldest forgotten first', async () => {
    const { engine } = await setup('retain', { flows, retainFinishedRuns: 2 });
    const first = await engine.run(double, { n: 1 });
    const failed = await engine.run(boom, {});
    expect(await engine.get(first.id)).toMatchObject({ status: 'completed', shared: { n: 1 } });
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed', error: { node: 'boom', attempts: 2 } });

    const third = await engine.run(double, { n: 3 });
    expect(await engine.get(first.id)).toBeUndefined();
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed' });
    expect(await engine.get(third.id)).toMatchObject({ status: 'completed' });
    expect(await engine.get('no-such-run')).toBeUndefined();
  });
});

const DB = 11;
/** The suite's Redis on database `db`: `CLIENT LIST` then tells this test's connections apart. */
function onDb(url: string, db: number): string {
  const parsed = new URL(url);
  parsed.pathname = `/${db}`;
  return parsed.toString();
}

describe('RedisEngine: results from run events, records with a retention', () => {
  const setup = useRedisHarness();

  it('result() of a run id that does not exist rejects with RUN_NOT_FOUND instead of waiting forever', async () => {
    const { engine } = await setup('unknown-result', { flows });
    await expect(
      within(engine.result('no-such-run'), 30_000, 'result() hung for an unknown run id'),
    ).rejects.toMatchObject({
      code: 'RUN_NOT_FOUND',
    });
  });

  it('awaits 1,000 runs at once over a small, constant number of Redis connections', async () => {
    hold = gate();
    const url = onDb(redisUrl(), DB);
    const { engine, connection } = await setup('thousand', { flows, url, concurrency: 50 });
    const myId = Number(await connection.client('ID'));
    const connections = async (): Promise<{ all: number; queueflow: number }> => {
      const lines = ((await connection.client('LIST')) as string)
        .split('\n')
        .filter((line) => line.includes(` db=${DB} `));
      const others = lines.filter((line) => !line.startsWith(`id=${myId} `));
      return { all: others.length, queueflow: others.filter((line) => / name=queueflow:/.test(line)).length };
    };

    // One run first, so every connection the engine and the worker open is open.
    expect((await engine.run(held, { hold: false })).status).toBe('completed');
    const baseline = await connections();
    expect(baseline.queueflow).toBeGreaterThanOrEqual(2); // the engine's command and event connections
    expect(baseline.all).toBeLessThanOrEqual(10);

    const handles = await Promise.all(Array.from({ length: 1000 }, (_, i) => engine.start(held, { hold: true, i })));
    let settled = 0;
    const results = Promise.all(handles.map((handle) => handle.result().finally(() => settled++)));
    const samples = [await connections()];

    hold.open();
    await waitFor(
      'the 1,000 runs to end',
      async () => {
        samples.push(await connections());
        return settled === 1000;
      },
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    samples.push(await connections());
    const ended = await results;
    expect(ended.filter((result) => result.status === 'completed')).toHaveLength(1000);
    expect(ended.map((result) => result.shared.i)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    for (const sample of samples) expect(sample).toEqual(baseline);
  }, 120_000);

  it('get() answers for finished runs, whose records expire after the retention', async () => {
    const retentionMs = 60_000;
    const { engine, keys, connection } = await setup('retention', {
      flows,
      workerOptions: { retentionMs },
      engineOptions: { retentionMs },
    });
    const completed = await engine.run(double, { n: 1 });
    const failed = await engine.run(boom, {});
    expect(await engine.get(completed.id)).toMatchObject({ status: 'completed', shared: { n: 1, doubled: 2 } });
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed', error: { node: 'boom', attempts: 2 } });

    for (const key of [keys.run(completed.id), keys.run(failed.id), keys.errors(failed.id)]) {
      const ttl = await connection.ttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(retentionMs / 1000);
    }
  });

  it('keeps finished runs for 7 days by default', async () => {
    const { engine, keys, connection } = await setup('retention-default', { flows });
    const result = await engine.run(double, { n: 2 });
    const ttl = await connection.ttl(keys.run(result.id));
    expect(ttl).toBeGreaterThan(7 * 24 * 3600 - 60);
    expect(ttl).toBeLessThanOrEqual(7 * 24 * 3600);
  });

  it('forgets a finished run once its retention has passed', async () => {
    const { engine } = await setup('retention-expiry', {
      flows,
      workerOptions: { retentionMs: 1000 },
      engineOptions: { retentionMs: 1000 },
    });
    const result = await engine.run(double, { n: 3 });
    expect((await engine.list()).map((info) => info.id)).toEqual([result.id]);
    await waitFor('the record to expire', async () => (await engine.get(result.id)) === undefined, {
      timeoutMs: 60_000,
    });
    expect(await engine.list()).toEqual([]);
  });
});
