/**
 * A newcomer's probes of taken children (ChildEndReport.take, StepChain.children): the commit that
 * ends a fan-out child makes the next one and the worker runs it in the same job. In-process
 * workers on the suite's Redis; kept as regression tests.
 */
import { describe, expect, it } from 'vitest';
import { childRunId } from '@queueflow/runtime/kernel';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject } from '@queueflow/runtime';
import { useRedisHarness, type RedisHarness } from '../support/redis-harness.js';
import { gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';

type S = { token: string; done?: number[]; n?: number; fails?: number[] };

/** Per token: children in flight now, the most at once, and each child step's executions. */
const inFlight = new Map<string, { now: number; most: number }>();
const execs = new Tally<string>();
/** Per token: indices whose last step fails while listed. */
const failing = new Map<string, Set<number>>();
const childGates = new Map<string, { reached: Gate; go: Gate; index: number }>();

function track(token: string, delta: number): void {
  const seen = inFlight.get(token) ?? { now: 0, most: 0 };
  seen.now += delta;
  seen.most = Math.max(seen.most, seen.now);
  inFlight.set(token, seen);
}

/** The first of a child's three steps: counts the child in flight. */
class First extends Node<S> {
  override prep(shared: S): string {
    track(shared.token, 1);
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    execs.add(token, `first-${this.params.index as number}`);
    const g = childGates.get(token);
    if (g && g.index === this.params.index) {
      g.reached.open();
      await g.go.promise;
    }
  }
}
class Middle extends Node<S> {
  override exec(): void {
    execs.add(String(this.params.token), `middle-${this.params.index as number}`);
  }
}
/** The last step: fails for indices in `shared.fails`, else appends its index; leaves flight. */
class Last extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override exec(token: string): void {
    execs.add(token, `last-${this.params.index as number}`);
  }
  override post(shared: S): void {
    track(shared.token, -1);
    if (failing.get(shared.token)?.has(this.params.index as number))
      throw new Error(`child ${this.params.index as number} fails (once)`);
    if ((shared.fails ?? []).includes(this.params.index as number))
      throw new Error(`child ${this.params.index as number} fails`);
    shared.done = [...(shared.done ?? []), this.params.index as number];
  }
}

class Fan extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return Array.from({ length: shared.n ?? 8 }, (_, index) => ({ index, token: shared.token }));
  }
}

function childFlow(queue?: string): Flow<S> {
  const first = new First({ name: 'first', ...(queue ? { queue } : {}) });
  first.next(new Middle({ name: 'middle' })).next(new Last({ name: 'last' }));
  return new Flow(first, { name: 'child' });
}

const capped = defineFlow('review-taken-capped', () => new Fan(childFlow(), { name: 'fan', concurrency: 2 }));
const uncapped = defineFlow('review-taken-uncapped', () => new Fan(childFlow(), { name: 'fan' }));
const oneAtATime = defineFlow('review-taken-one', () => new Fan(childFlow(), { name: 'fan', concurrency: 1 }));
const collecting = defineFlow(
  'review-taken-collect',
  () => new Fan(childFlow(), { name: 'fan', concurrency: 2, onItemError: 'collect' }),
);
const failFast = defineFlow('review-taken-failfast', () => new Fan(childFlow(), { name: 'fan', concurrency: 2 }));
const sideFirst = defineFlow('review-taken-side', () => new Fan(childFlow('side'), { name: 'fan', concurrency: 2 }));

/** Nested: each outer child is itself a capped fan-out of 3 inner children. */
class Inner extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return Array.from({ length: 3 }, (_, i) => ({
      index: (this.params.outer as number) * 10 + i,
      token: shared.token,
    }));
  }
}
class Outer extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return Array.from({ length: 3 }, (_, outer) => ({ outer, token: shared.token }));
  }
}
const nested = defineFlow(
  'review-taken-nested',
  () =>
    new Outer(new Flow(new Inner(childFlow(), { name: 'inner', concurrency: 1 }), { name: 'outer-child' }), {
      name: 'outer',
      concurrency: 1,
    }),
);

/** Budget `review-slot` (concurrency 1) held across a few ticks by each child's first exec. */
const slotInFlight = new Map<string, { now: number; most: number }>();
class Slotted extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    const seen = slotInFlight.get(token) ?? { now: 0, most: 0 };
    slotInFlight.set(token, seen);
    seen.now += 1;
    seen.most = Math.max(seen.most, seen.now);
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    seen.now -= 1;
  }
}
/** Fails the first try of each child's first step. */
class FailsFirst extends Node<S> {
  override exec(): void {
    if (this.currentRetry === 0) throw new Error('first try');
  }
}
/** Receives on `box-<token>-<index>` (parks until the test sends). */
class Receives extends Node<S> {
  override prep(shared: S): Promise<unknown> {
    return this.receive(`box-${shared.token}-${this.params.index as number}`);
  }
}
function withHead(head: Node<S>): Flow<S> {
  head.next(new Last({ name: 'last' }));
  return new Flow(head, { name: 'child' });
}
const throttledFan = defineFlow(
  'review-taken-throttled',
  () =>
    new Fan(withHead(new Slotted({ name: 'slotted', limits: [{ key: 'review-slot', concurrency: 1 }] })), {
      name: 'fan',
      concurrency: 3,
    }),
);
const retryFan = defineFlow(
  'review-taken-retry',
  () =>
    new Fan(withHead(new FailsFirst({ name: 'flaky', maxRetries: 2, wait: 0.05 })), { name: 'fan', concurrency: 2 }),
);
const parkFan = defineFlow(
  'review-taken-park',
  () => new Fan(withHead(new Receives({ name: 'receive' })), { name: 'fan', concurrency: 1 }),
);

function allOnSide(): Flow<S> {
  const first = new First({ name: 'first', queue: 'side' });
  first.next(new Middle({ name: 'middle', queue: 'side' })).next(new Last({ name: 'last', queue: 'side' }));
  return new Flow(first, { name: 'child' });
}
const allSide = defineFlow('review-taken-all-side', () => new Fan(allOnSide(), { name: 'fan', concurrency: 2 }));

/** One node per child; child i sets `shared.c<i>` to i (each its own path, merged once). */
class Adds extends Node<S> {
  override post(shared: S): void {
    (shared as Record<string, unknown>)[`c${this.params.index as number}`] = this.params.index;
  }
}
const wide = defineFlow('review-taken-wide', () => new Fan(new Adds({ name: 'adds' }), { name: 'fan' }));

/** Order of posts across runs, per token: `c<i>` for children, `high` for the urgent run. */
const order = new Tally<string>();
class Ordered extends Node<S> {
  override async exec(): Promise<void> {
    const g = childGates.get(String(this.params.token));
    if (g && g.index === this.params.index) {
      g.reached.open();
      await g.go.promise;
    }
  }
  override post(shared: S): void {
    order.add(shared.token, this.params.index === undefined ? 'high' : `c${this.params.index as number}`);
  }
}
const lowFan = defineFlow(
  'review-taken-low',
  () => new Fan(new Ordered({ name: 'ordered' }), { name: 'fan', concurrency: 1 }),
);
const urgent = defineFlow('review-taken-urgent', () => new Flow(new Ordered({ name: 'urgent' })));

/** Each child sends its index to `inbox-<token>`, then ends. */
class SendsIndex extends Node<S> {
  override async post(shared: S): Promise<void> {
    await this.send(`inbox-${shared.token}`, { index: this.params.index as number });
  }
}
const sendingFan = defineFlow(
  'review-taken-sending',
  () => new Fan(new SendsIndex({ name: 'sends' }), { name: 'fan', concurrency: 1 }),
);
/** Receives `shared.n` messages from `inbox-<token>`, one per step (parks while empty). */
class Collects extends Node<S> {
  override prep(shared: S): Promise<unknown> {
    return this.receive(`inbox-${shared.token}`);
  }
  override post(shared: S, message: { body: { index: number } }): string | undefined {
    shared.done = [...(shared.done ?? []), message.body.index];
    return shared.done.length < (shared.n ?? 0) ? 'again' : undefined;
  }
}
const collector = defineFlow('review-taken-collector', () => {
  const node = new Collects({ name: 'collects' });
  node.on('again', node);
  return new Flow(node);
});

const flows = [
  sendingFan,
  collector,
  lowFan,
  urgent,
  wide,
  allSide,
  capped,
  uncapped,
  oneAtATime,
  collecting,
  failFast,
  sideFirst,
  nested,
  throttledFan,
  retryFan,
  parkFan,
];

async function takenLeft(redis: RedisHarness): Promise<string[]> {
  const keys = (await redis.scanKeys()).filter((key) => key.includes(':workers:taken:'));
  const members = await Promise.all(keys.map((key) => redis.connection.smembers(key)));
  return members.flat();
}

/** Each of the `n` children's last node ran once (no step ran twice). */
function expectEachChildOnce(token: string, n: number): void {
  for (let i = 0; i < n; i++)
    expect(
      execs.of(token).filter((e) => e === `last-${i}`),
      `last-${i}`,
    ).toHaveLength(1);
}

/** Waits until no worker's taken set holds anything (every taken task ran and was released). */
async function takenSetsEmpty(redis: RedisHarness): Promise<void> {
  await waitFor('the taken sets to empty', async () => (await takenLeft(redis)).length === 0);
}

describe('review: taken children', () => {
  const setup = useRedisHarness();

  it.each([
    ['concurrency 2', capped],
    ['the default window', uncapped],
    ['concurrency 1', oneAtATime],
  ] as const)('%s: each child runs its steps once, merges once and in order, within the cap', async (_, flow) => {
    const redis = await setup('review-taken-cap', { flows, workers: 2, concurrency: 2 });
    const token = `cap-${redis.prefix}`;
    const result = await redis.engine.run<S>(flow, { token, n: 9 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    const cap = flow === capped ? 2 : flow === oneAtATime ? 1 : 9;
    expect(inFlight.get(token)!.most).toBeLessThanOrEqual(cap);
    expect(inFlight.get(token)!.now).toBe(0);
    for (let i = 0; i < 9; i++)
      for (const step of ['first', 'middle', 'last'])
        expect(
          execs.of(token).filter((e) => e === `${step}-${i}`),
          `${step}-${i}`,
        ).toHaveLength(1);
    await takenSetsEmpty(redis);
    const children = await redis.engine.children(result.id);
    expect(children.map((c) => c.status)).toEqual(Array(9).fill('completed'));
  });

  it('a child whose first node is on another queue is not taken here, and runs there', async () => {
    const redis = await setup('review-taken-side', { flows, workers: 1, concurrency: 2 });
    await redis.worker({ queues: ['side'], concurrency: 2 });
    const token = `side-${redis.prefix}`;
    const result = await redis.engine.run<S>(sideFirst, { token, n: 6 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 3, 4, 5]);
    expect(inFlight.get(token)!.most).toBeLessThanOrEqual(2);
  });

  it('collect: failing children are collected, the rest still run in the cap', async () => {
    const redis = await setup('review-taken-collect', { flows, workers: 2, concurrency: 2 });
    const token = `collect-${redis.prefix}`;
    const result = await redis.engine.run<S>(collecting, { token, n: 8, fails: [1, 4, 5] });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 2, 3, 6, 7]);
    const children = await redis.engine.children(result.id);
    expect(children.map((c) => c.status)).toEqual([
      'completed',
      'failed',
      'completed',
      'completed',
      'failed',
      'failed',
      'completed',
      'completed',
    ]);
    expect(inFlight.get(token)!.most).toBeLessThanOrEqual(2);
    await takenSetsEmpty(redis);
  });

  it('fail-fast: the parent fails, no child is left running, no child starts after', async () => {
    const redis = await setup('review-taken-failfast', { flows, workers: 2, concurrency: 2 });
    const token = `ff-${redis.prefix}`;
    const result = await redis.engine.run<S>(failFast, { token, n: 8, fails: [2] });
    expect(result.status).toBe('failed');
    let children: Awaited<ReturnType<typeof redis.engine.children>> = [];
    const settled = await waitFor(
      'no child running',
      async () => {
        children = await redis.engine.children(result.id);
        return children.every((c) => c.status !== 'running'); // unstarted ones read 'queued'
      },
      { timeoutMs: 30_000 }, // the cascade follows the parent's end: slow on a loaded machine, not wrong
    ).catch(() => false);
    expect(settled, JSON.stringify(children)).toBe(true);
    const firsts = execs
      .of(token)
      .filter((e) => e.startsWith('first-'))
      .map((e) => Number(e.slice(6)));
    expect(Math.max(...firsts)).toBeLessThanOrEqual(4);
    await takenSetsEmpty(redis);
  });

  it('cancelling the parent while a taken child runs ends that child; no later child starts', async () => {
    const redis = await setup('review-taken-cancel', { flows, workers: 1, concurrency: 1 });
    const token = `cancel-${redis.prefix}`;
    const g = { reached: gate(), go: gate(), index: 2 };
    childGates.set(token, g);
    const run = await redis.engine.start<S>(oneAtATime, { token, n: 5 });
    await g.reached.promise; // child 2 runs: taken by child 1's end
    await redis.engine.cancel(run.id);
    g.go.open();
    const result = await run.result();
    expect(result.status).toBe('cancelled');
    const child2 = childRunId(run.id, 1, 2);
    await redis.until(child2, 'child 2 to end', (info) => info.status !== 'running');
    expect((await redis.engine.get(child2))!.status).toBe('cancelled');
    expect(await redis.engine.get(childRunId(run.id, 1, 3))).toBeUndefined();
    expect(execs.of(token).filter((e) => e.startsWith('first-'))).toEqual(['first-0', 'first-1', 'first-2']);
    await takenSetsEmpty(redis);
  });

  it('a taken child inherits the parent priority', async () => {
    const redis = await setup('review-taken-priority', { flows, workers: 1, concurrency: 1 });
    const token = `prio-${redis.prefix}`;
    const result = await redis.engine.run<S>(oneAtATime, { token, n: 3 }, { priority: 7 });
    expect(result.status).toBe('completed');
    for (let i = 0; i < 3; i++)
      expect(await redis.connection.hget(redis.keys.run(childRunId(result.id, 1, i)), 'priority'), `child ${i}`).toBe(
        '7',
      );
  });

  it('nested fan-outs: every inner child runs once and merges in order', async () => {
    const redis = await setup('review-taken-nested', { flows, workers: 2, concurrency: 2 });
    const token = `nested-${redis.prefix}`;
    const result = await redis.engine.run<S>(nested, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 10, 11, 12, 20, 21, 22]);
    await takenSetsEmpty(redis);
  });

  it('a worker closed mid-fan-out hands its taken children to the other worker', async () => {
    const redis = await setup('review-taken-close', { flows, workers: 0 });
    const a = await redis.worker({ concurrency: 1 });
    const token = `close-${redis.prefix}`;
    const g = { reached: gate(), go: gate(), index: 2 };
    childGates.set(token, g);
    const run = await redis.engine.start<S>(oneAtATime, { token, n: 6 });
    await g.reached.promise; // worker a runs child 2, taken
    await redis.worker({ concurrency: 1 });
    const closing = a.close();
    g.go.open();
    await closing;
    const result = await run.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 3, 4, 5]);
    expectEachChildOnce(token, 6);
    await takenSetsEmpty(redis);
  });

  it('children throttled by a budget: one exec at a time, every child once, in order', async () => {
    const redis = await setup('review-taken-throttled', { flows, workers: 2, concurrency: 3 });
    const token = `throttled-${redis.prefix}`;
    const result = await redis.engine.run<S>(throttledFan, { token, n: 8 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(slotInFlight.get(token)!.most).toBe(1);
    await takenSetsEmpty(redis);
  });

  it('children whose first step retries: each child retried on its own, merged once', async () => {
    const redis = await setup('review-taken-retry', { flows, workers: 2, concurrency: 2 });
    const token = `retry-${redis.prefix}`;
    const result = await redis.engine.run<S>(retryFan, { token, n: 6 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 3, 4, 5]);
    expectEachChildOnce(token, 6);
    await takenSetsEmpty(redis);
  });

  it('a taken child that parks on a mailbox is woken by a send, and the next one is taken', async () => {
    const redis = await setup('review-taken-park', { flows, workers: 1, concurrency: 1 });
    const token = `park-${redis.prefix}`;
    const run = await redis.engine.start<S>(parkFan, { token, n: 4 });
    for (let i = 0; i < 4; i++) {
      await redis.until(childRunId(run.id, 1, i), `child ${i} to park`, (info) => info.status === 'waiting');
      await redis.engine.send(`box-${token}-${i}`, { i });
    }
    const result = await run.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 3]);
    await takenSetsEmpty(redis);
  });

  it('children wholly on another queue are taken by the workers of that queue', async () => {
    const redis = await setup('review-taken-all-side', { flows, workers: 1, concurrency: 2 });
    await redis.worker({ queues: ['side'], concurrency: 2 });
    const token = `all-side-${redis.prefix}`;
    const result = await redis.engine.run<S>(allSide, { token, n: 7 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.done).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(inFlight.get(token)!.most).toBeLessThanOrEqual(2);
    await takenSetsEmpty(redis);
  });

  it('retry of a parent that failed fast re-runs its fan-out to completion', async () => {
    const redis = await setup('review-taken-retry-parent', { flows, workers: 2, concurrency: 2 });
    const token = `retry-parent-${redis.prefix}`;
    failing.set(token, new Set([3]));
    const failed = await redis.engine.run<S>(failFast, { token, n: 6 });
    expect(failed.status).toBe('failed');
    await waitFor('no child running', async () =>
      (await redis.engine.children(failed.id)).every((c) => c.status !== 'running'),
    );
    failing.delete(token);
    const retried = await (await redis.engine.retry(failed.id)).result();
    expect(retried.status, JSON.stringify(retried.error)).toBe('completed');
    expect(retried.shared.done).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('a fan-out over the default window (1,100 children) refills past it and merges each child once', async () => {
    const redis = await setup('review-taken-wide', { flows, workers: 2, concurrency: 4 });
    const token = `wide-${redis.prefix}`;
    const n = 1100;
    const result = await redis.engine.run<S>(wide, { token, n });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    const shared = result.shared as Record<string, unknown>;
    for (let i = 0; i < n; i++) expect(shared[`c${i}`], `c${i}`).toBe(i);
    expect(Object.keys(shared).filter((key) => key.startsWith('c'))).toHaveLength(n);
    expect((await redis.engine.get(result.id))!.conflicts ?? []).toEqual([]);
    await takenSetsEmpty(redis);
  }, 120_000);

  it('a chain of taken children of a low-priority fan-out gives its slot back within continueSteps', async () => {
    const redis = await setup('review-taken-priority-slot', { flows, workers: 1, concurrency: 1 });
    const token = `slot-${redis.prefix}`;
    const g = { reached: gate(), go: gate(), index: 0 };
    childGates.set(token, g);
    const low = await redis.engine.start<S>(lowFan, { token, n: 150 }, { priority: 100 });
    await g.reached.promise; // child 0 runs in the only slot
    const high = await redis.engine.start<S>(urgent, { token }, { priority: 1 });
    g.go.open();
    expect((await high.result()).status).toBe('completed');
    expect((await low.result()).status).toBe('completed');
    const at = order.of(token).indexOf('high');
    // The default continueSteps is 50: the chain that began with child 0 runs at most 51 steps.
    expect(
      at,
      order
        .of(token)
        .slice(0, at + 1)
        .join(' '),
    ).toBeLessThanOrEqual(52);
  });

  it('children that wake a parked run as they end: the wake and the next child are both taken', async () => {
    const redis = await setup('review-taken-wake-and-child', { flows, workers: 1, concurrency: 1 });
    const token = `wake-child-${redis.prefix}`;
    const receiver = await redis.engine.start<S>(collector, { token, n: 6 });
    await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
    const fan = await redis.engine.run<S>(sendingFan, { token, n: 6 });
    expect(fan.status, JSON.stringify(fan.error)).toBe('completed');
    const got = await receiver.result();
    expect(got.status, JSON.stringify(got.error)).toBe('completed');
    expect(got.shared.done).toEqual([0, 1, 2, 3, 4, 5]);
    await takenSetsEmpty(redis);
  });

  it.each([1, 2, 4])(
    'continueSteps %i: chains end mid-child; every step once, merged in order',
    async (continueSteps) => {
      const redis = await setup(`review-taken-short-${continueSteps}`, { flows, workers: 0 });
      await redis.worker({ concurrency: 1, continueSteps });
      await redis.worker({ concurrency: 2, continueSteps });
      const token = `short-${continueSteps}-${redis.prefix}`;
      const result = await redis.engine.run<S>(capped, { token, n: 7 });
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      expect(result.shared.done).toEqual([0, 1, 2, 3, 4, 5, 6]);
      for (let i = 0; i < 7; i++)
        for (const step of ['first', 'middle', 'last'])
          expect(
            execs.of(token).filter((e) => e === `${step}-${i}`),
            `${step}-${i}`,
          ).toHaveLength(1);
      await takenSetsEmpty(redis);
    },
  );

  it('the probes exercise the take: a one-at-a-time fan-out of 9 runs in far fewer jobs than children', async () => {
    const redis = await setup('review-taken-jobs', { flows, workers: 1, concurrency: 1 });
    const token = `jobs-${redis.prefix}`;
    const result = await redis.engine.run<S>(oneAtATime, { token, n: 9 });
    expect(result.status).toBe('completed');
    const entries = await redis.connection.xrange(`${redis.prefix}:${redis.keys.stepQueue}:events`, '-', '+');
    const active = entries.filter(([, fields]) => fields[fields.indexOf('event') + 1] === 'active').length;
    expect(active).toBeLessThan(9);
  });
});
