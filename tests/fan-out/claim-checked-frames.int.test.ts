/**
 * A newcomer's probes of the claim check of checkpoint frames (prepRes, visit.prepRes,
 * visit.results) and of staged value texts (`{prefix}:value-staged:<hash>:<token>`), with a small
 * `largeValueBytes`: history, sharedAt, fork and retry of runs whose frames held large values, on
 * both engines; and, on Redis, no staged text left behind by a transition that lands or not.
 */
import { describe, expect, it } from 'vitest';
import { BatchNode, defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject } from '@queueflow/runtime';
import { useRedisHarness } from '../support/redis-harness.js';
import { gate, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { useEngine } from '../conformance/engine-harness.js';

type S = Record<string, any>;
const LIMIT = 1024;
const big = (tag: string): string => `${tag}:${'y'.repeat(3000)}`;

/** A fan-out whose list of param sets (its prep result, in the parent's frames) is over the limit. */
class Fan extends ParallelBatchFlow<S> {
  override prep(): JsonObject[] {
    return [0, 1, 2].map((i) => ({ i, pad: big(`pad${i}`) }));
  }
}
class Child extends Node<S> {
  override post(shared: S): void {
    shared[`c${this.params.i as number}`] = (this.params.pad as string).length;
  }
}
/** A BatchNode over large items: its prep result and its results so far are over the limit. */
class Docs extends BatchNode<S> {
  override prep(): string[] {
    return [big('d0'), big('d1'), big('d2')];
  }
  override exec(doc: string): string {
    return `${doc}!`;
  }
  override post(shared: S, _docs: string[], results: string[]): void {
    shared.docs = results.map((r) => r.length);
  }
}
const failOnce = new Map<string, boolean>();
/** Fails while `failOnce` says so for the run's token. */
class Gatekeeper extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): void {
    if (failOnce.get(token)) throw new Error('not yet');
  }
  override post(shared: S): void {
    shared.end = true;
  }
}
const framed = defineFlow('review-framed', () => {
  const fan = new Fan(new Child({ name: 'child' }), { name: 'fan' });
  fan.next(new Docs({ name: 'docs' })).next(new Gatekeeper({ name: 'gate' }));
  return new Flow(fan);
});

const holdGates = new Map<string, { reached: Gate; go: Gate }>();
/** Holds in exec until the test opens its gate; then writes a large value. */
class Holds extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<void> {
    const g = holdGates.get(token);
    if (g) {
      g.reached.open();
      await g.go.promise;
    }
  }
  override post(shared: S): void {
    shared.late = big(`late-${shared.token}`);
  }
}
const holding = defineFlow('review-holding', () => new Flow(new Holds({ name: 'holds' })));

const postGates = new Map<string, { reached: Gate; go: Gate; done: Gate }>();
/** Writes a large value in post, then waits there for the test's gate. */
class HoldsInPost extends Node<S> {
  override async post(shared: S): Promise<void> {
    shared.late = big(`late-${shared.token}`);
    const g = postGates.get(shared.token as string);
    if (g) {
      g.reached.open();
      await g.go.promise;
      // The commit follows this post: the test waits for the worker's task to end after it.
      setImmediate(() => g.done.open());
    }
  }
}
const holdingInPost = defineFlow('review-holding-post', () => new Flow(new HoldsInPost({ name: 'holds' })));

const flows = [framed, holding, holdingInPost];

const expected = (token: string): S => ({
  token,
  c0: 3005,
  c1: 3005,
  c2: 3005,
  docs: [3004, 3004, 3004],
  end: true,
});

describe.each(['LocalEngine', 'RedisEngine', 'RedisCluster'] as const)('%s: claim-checked frames', (name) => {
  const setup = useEngine(name);

  it('history, sharedAt, fork from every step and retry of a run whose frames held large values', async () => {
    const h = await setup('review-framed', { flows, largeValueBytes: LIMIT, autoAdvance: true });
    const token = `framed-${name}-${Math.random()}`;
    failOnce.set(token, true);
    const failed = await h.engine.run<S>(framed, { token });
    expect(failed.status).toBe('failed');

    const history = await h.engine.history(failed.id);
    expect(history.length).toBeGreaterThanOrEqual(3);
    for (let step = 0; step <= history.length; step++) await h.engine.sharedAt(failed.id, step);

    failOnce.set(token, false);
    const retried = await (await h.engine.retry(failed.id)).result();
    expect(retried.status, JSON.stringify(retried.error)).toBe('completed');
    expect(retried.shared).toEqual(expected(token));

    const done = await h.engine.history(failed.id);
    for (let step = 0; step < done.length; step++) {
      if (step === 1) {
        // After step 1 the run waited on its fan-out: no fork from there (assertForkable).
        await expect(h.engine.fork(failed.id, { step })).rejects.toThrow(/the run waited on its children/);
        continue;
      }
      const fork = await h.engine.fork(failed.id, { step });
      const result = await fork.result();
      expect(result.status, `fork at ${step}: ${JSON.stringify(result.error)}`).toBe('completed');
      expect(result.shared, `fork at ${step}`).toEqual(expected(token));
    }
  });
});

describe('RedisEngine: staged value texts', () => {
  const setup = useRedisHarness();

  async function staged(redis: { scanKeys(): Promise<string[]> }): Promise<string[]> {
    return (await redis.scanKeys()).filter((key) => key.includes(':value-staged:'));
  }

  it('a run with large values in its frames leaves no staged text', async () => {
    const redis = await setup('review-staged-ok', {
      flows,
      workerOptions: { largeValueBytes: LIMIT },
      engineOptions: { largeValueBytes: LIMIT },
    });
    const token = `staged-ok-${redis.prefix}`;
    const result = await redis.engine.run<S>(framed, { token, blob: big('start') });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(await staged(redis)).toEqual([]);
  });

  it('a start refused by its idempotency key leaves no staged text', async () => {
    const redis = await setup('review-staged-idem', {
      flows,
      workers: 0,
      engineOptions: { largeValueBytes: LIMIT },
    });
    const token = `staged-idem-${redis.prefix}`;
    const first = await redis.engine.start<S>(holding, { token, blob: big('one') }, { idempotencyKey: 'k' });
    const second = await redis.engine.start<S>(holding, { token, blob: big('two') }, { idempotencyKey: 'k' });
    expect(second.id).toBe(first.id);
    expect(await staged(redis)).toEqual([]);
  });

  it('a step whose run was cancelled during its post (a stale commit) leaves no staged text', async () => {
    const redis = await setup('review-staged-stale', {
      flows,
      workers: 1,
      workerOptions: { largeValueBytes: LIMIT },
      engineOptions: { largeValueBytes: LIMIT },
    });
    const token = `staged-stale-${redis.prefix}`;
    const g = { reached: gate(), go: gate(), done: gate() };
    postGates.set(token, g);
    const run = await redis.engine.start<S>(holdingInPost, { token });
    await g.reached.promise;
    await redis.engine.cancel(run.id);
    g.go.open();
    expect((await run.result()).status).toBe('cancelled');
    await g.done.promise;
    await waitFor('the worker to be idle', async () => (await redis.engine.workers()).every((w) => w.active === 0));
    expect(await staged(redis)).toEqual([]);
  });

  it('runs storing the same value at once while others release it: one value key, no staged text', async () => {
    const redis = await setup('review-staged-shared', {
      flows,
      workers: 2,
      workerOptions: { largeValueBytes: LIMIT },
      engineOptions: { largeValueBytes: LIMIT },
    });
    const token = `staged-shared-${redis.prefix}`;
    const blob = big('same');
    // Waves: each wave's runs store `blob` while the previous wave's runs end (and release it).
    const results = [];
    let wave = Promise.resolve<unknown[]>([]);
    for (let i = 0; i < 4; i++) {
      const starts = Array.from({ length: 5 }, () => redis.engine.start<S>(framed, { token, blob }));
      const handles = await Promise.all(starts);
      await wave;
      wave = Promise.all(handles.map((handle) => handle.result()));
      results.push(wave);
    }
    for (const done of await Promise.all(results))
      for (const result of done as { status: string; shared: S }[]) {
        expect(result.status).toBe('completed');
        expect(result.shared.blob).toBe(blob);
      }
    expect(await staged(redis)).toEqual([]);
    const values = (await redis.scanKeys()).filter((key) => /:value:[0-9a-f]{64}$/.test(key));
    for (const key of values) expect(await redis.connection.exists(key), key).toBe(1);
    const refs = (await redis.scanKeys()).filter((key) => /:value:[0-9a-f]{64}:refs$/.test(key));
    expect(refs.length).toBe(values.length);
  });
});
