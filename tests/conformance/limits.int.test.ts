/**
 * Contract: flow control (DESIGN "Flow control", issue 13), on both engines with real concurrency
 * (RedisEngine: three workers; LocalEngine: eight slots). A node's `concurrency` limit is never
 * exceeded across workers, and a visit without budget waits with its run `throttled` (naming the
 * key) until a release wakes it; no sliding window ever admits more than `rate.max` (checked on
 * the store's own admission times); a `RateLimitedError` delays the step without using a try and
 * holds the key back for other runs; the fan-out `concurrency` cap and a `concurrency` limit are
 * both honoured; `this.spend` corrects the window; bad limits are refused naming the value.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, RateLimitedError, type Limit } from '@queueflow/runtime';
import { MemoryRunStore, type BudgetReply, type BudgetRequest } from '@queueflow/runtime/kernel';
import { RedisRunStore } from '@queueflow/worker';
import { gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine, type EngineHarness } from './engine-harness.js';

type S = Record<string, any>;

/** Execs running now and the most seen at once, by token. */
const inFlight = new Map<string, { now: number; max: number }>();
/** Execs blocked until the test lets them go, by token, oldest first. */
const blocked = new Map<string, Gate[]>();
const calls = new Tally<number>();

function enter(token: string): void {
  const entry = inFlight.get(token) ?? { now: 0, max: 0 };
  entry.now++;
  entry.max = Math.max(entry.max, entry.now);
  inFlight.set(token, entry);
}

/** Counts itself in flight and waits for the test to let it go. */
class Call extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<string> {
    enter(token);
    const held = gate();
    blocked.set(token, [...(blocked.get(token) ?? []), held]);
    await held.promise;
    inFlight.get(token)!.now--;
    return 'done';
  }
  override post(shared: S, _p: unknown, execRes: string): void {
    shared.result = execRes;
  }
}

/** Records that it ran (its token is the param `token` for fan-out children). */
class Quick extends Node<S> {
  override prep(shared: S): string {
    return (this.params.token as string | undefined) ?? (shared.token as string);
  }
  override exec(token: string): number {
    calls.add(token, 1);
    return 1;
  }
  override post(shared: S): void {
    shared.done = true;
  }
}

/**
 * Throws RateLimitedError (`shared.retryAfterMs`, default 50) on its first `shared.times` calls
 * (default 2); maxRetries 1: a used try would fail the run.
 */
class Limited extends Node<S> {
  override prep(shared: S): { token: string; times: number; retryAfterMs: number } {
    return { token: shared.token as string, times: shared.times ?? 2, retryAfterMs: shared.retryAfterMs ?? 50 };
  }
  override exec({ token, times, retryAfterMs }: { token: string; times: number; retryAfterMs: number }): string {
    calls.add(token, this.currentRetry);
    if (calls.count(token) <= times) throw new RateLimitedError('429 from the provider', { retryAfterMs });
    return 'ok';
  }
  override post(shared: S, _p: unknown, execRes: string): void {
    shared.result = execRes;
  }
}

/** Spends what its prep result says it really cost. */
class Spender extends Node<S> {
  override prep(shared: S): number {
    return shared.tokens as number;
  }
  override async exec(tokens: number): Promise<number> {
    await this.spend('tokens', tokens);
    return tokens;
  }
}

/** Waits for a message at `inbox-<token>` inside exec (the run parks), then returns its body. */
class Parker extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<unknown> {
    const message = await this.receive(`inbox-${token}`);
    return message?.body;
  }
  override post(shared: S, _p: unknown, execRes: unknown): void {
    shared.result = execRes;
  }
}

const twoAtATime: Limit = { key: 'model', concurrency: 2 };
const parking = defineFlow(
  'parking',
  () => new Flow(new Parker({ name: 'parker', limits: [{ key: 'slot', concurrency: 1 }] })),
);
const slotted = defineFlow(
  'slotted',
  () => new Flow(new Quick({ name: 'slotted', limits: [{ key: 'slot', concurrency: 1 }] })),
);
const calling = defineFlow('calling', () => new Flow(new Call({ name: 'call', limits: [twoAtATime] })));
const rated = defineFlow(
  'rated',
  () => new Flow(new Quick({ name: 'quick', limits: [{ key: 'api', rate: { max: 3, perMs: 400 } }] })),
);
const limited = defineFlow(
  'limited',
  () =>
    new Flow(
      new Limited({ name: 'limited', maxRetries: 1, limits: [{ key: 'provider', rate: { max: 100, perMs: 1000 } }] }),
    ),
);
const sameKey = defineFlow(
  'same-key',
  () => new Flow(new Quick({ name: 'other', limits: [{ key: 'provider', concurrency: 5 }] })),
);
const spending = defineFlow(
  'spending',
  () =>
    new Flow(
      new Spender({ name: 'spender', limits: [{ key: 'tokens', rate: { max: 1000, perMs: 60_000 }, cost: () => 10 }] }),
    ),
);
/** A fan-out of six children, three at a time; each child's node takes a `concurrency` limit. */
function fanOut(name: string, limit: number) {
  class Children extends ParallelBatchFlow<S> {
    override prep(shared: S): { token: string; i: number }[] {
      return Array.from({ length: 6 }, (_, i) => ({ token: shared.token as string, i }));
    }
  }
  class Child extends Call {
    override prep(): string {
      return this.params.token as string;
    }
  }
  return defineFlow(
    name,
    () =>
      new Children(new Flow(new Child({ name: 'child', limits: [{ key: 'model', concurrency: limit }] })), {
        concurrency: 3,
      }),
  );
}
const fanOutTight = fanOut('fan-out-tight', 2);
const fanOutLoose = fanOut('fan-out-loose', 5);
/** Draws from 'metered' (one at a time) only for runs whose param `metered` is true. */
const sometimes = defineFlow(
  'sometimes',
  () =>
    new Flow(
      new Call({
        name: 'sometimes',
        limits: [{ key: 'metered', concurrency: 1, when: (_input, p) => p.metered === true }],
      }),
    ),
);
const flows = [calling, rated, limited, sameKey, spending, fanOutTight, fanOutLoose, parking, slotted, sometimes];

/** Admissions the stores made, by budget key: the store's clock at each (epoch ms). */
const admissions = new Map<string, number[]>();
function recordAdmissions(): void {
  for (const Store of [MemoryRunStore, RedisRunStore]) {
    const original = Store.prototype.acquireBudget;
    vi.spyOn(Store.prototype, 'acquireBudget').mockImplementation(async function (
      this: InstanceType<typeof Store>,
      request: BudgetRequest,
    ): Promise<BudgetReply> {
      const reply = await original.call(this, request);
      if (reply.admitted)
        for (const limit of request.limits) admissions.set(limit.key, [...(admissions.get(limit.key) ?? []), reply.at]);
      return reply;
    });
  }
}

afterEach(() => {
  vi.restoreAllMocks();
  admissions.clear();
});

/**
 * Lets the blocked execs of `token` go one at a time, each once the in-flight count is at the
 * limit (or every remaining one is in flight), until `total` have run.
 */
async function drain(h: EngineHarness, token: string, total: number, limit: number, runIds: string[]): Promise<void> {
  for (let released = 0; released < total; released++) {
    const expected = Math.min(limit, total - released);
    await waitFor(`${expected} execs of ${token} in flight`, () => (blocked.get(token)?.length ?? 0) >= expected);
    if (total - released > limit && runIds.length > 0) {
      // The others wait for the budget, throttled, holding no slot.
      await waitFor('a throttled run', async () => {
        for (const id of runIds) if ((await h.engine.get(id))?.status === 'throttled') return true;
        return false;
      });
    }
    const [next, ...rest] = blocked.get(token)!;
    blocked.set(token, rest);
    next!.open();
  }
}

describe.each(engines)('%s: flow control', (name) => {
  const setup = useEngine(name);
  const options = { flows, workers: 3, concurrency: name === 'RedisEngine' ? 4 : 8 };

  it('a concurrency limit is never exceeded; runs without budget show throttled with the key', async () => {
    const h = await setup('limits-concurrency', options);
    const token = `concurrency-${name}`;
    const handles = await Promise.all(Array.from({ length: 6 }, () => h.engine.start<S>(calling, { token })));
    const ids = handles.map((handle) => handle.id);
    const seen = await waitFor('a throttled run', async () => {
      for (const id of ids) {
        const info = await h.engine.get(id);
        if (info?.status === 'throttled') return info;
      }
      return undefined;
    });
    expect(seen.throttledBy).toBe('model');
    expect(seen.attempts).toBe(0);
    await drain(h, token, 6, 2, ids);
    const results = await Promise.all(ids.map((id) => h.engine.result(id)));
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('completed'));
    expect(inFlight.get(token)!.max).toBe(2);
    for (const id of ids) {
      const info = (await h.engine.get(id))!;
      expect(info.errors).toEqual([]);
      expect(info.throttledBy).toBeUndefined();
    }
  });

  it('a limit whose `when` is false takes no budget and never throttles', async () => {
    recordAdmissions();
    const h = await setup('limits-when', options);
    const token = `when-${name}`;
    const off = await Promise.all(
      Array.from({ length: 3 }, () => h.engine.start<S>(sometimes, { token }, { params: { metered: false } })),
    );
    // All three in exec at once, though the limit allows one: it does not apply to them.
    await waitFor('three execs in flight', () => (blocked.get(token)?.length ?? 0) === 3);
    for (const held of blocked.get(token)!) held.open();
    blocked.set(token, []);
    for (const handle of off) expect((await handle.result()).status).toBe('completed');
    expect(admissions.get('metered')).toBeUndefined();
    const on = await Promise.all(
      Array.from({ length: 2 }, () => h.engine.start<S>(sometimes, { token }, { params: { metered: true } })),
    );
    await drain(
      h,
      token,
      2,
      1,
      on.map((handle) => handle.id),
    );
    for (const handle of on) expect((await handle.result()).status).toBe('completed');
    expect(admissions.get('metered')).toHaveLength(2);
  });

  it('budgets() shows each key: in use against its limits, and the runs waiting for it', async () => {
    const h = await setup('limits-budgets', options);
    const token = `budgets-${name}`;
    const handles = await Promise.all(Array.from({ length: 4 }, () => h.engine.start<S>(calling, { token })));
    await waitFor('two execs in flight', () => (blocked.get(token)?.length ?? 0) === 2);
    const budget = await waitFor('two runs waiting for the budget', async () => {
      const found = (await h.engine.budgets()).find((b) => b.key === 'model');
      return found && found.waiting.length === 2 ? found : undefined;
    });
    expect(budget).toMatchObject({ key: 'model', inUse: 2, concurrency: 2, unitsInWindow: 0 });
    // queues(): the two in exec run, the two throttled wait (in the delayed set), served by the workers.
    // A throttled step's job is active for a moment before it moves to the delayed set: read again.
    const queue = await waitFor('the queue to show 2 running and 2 throttled', async () => {
      const found = (await h.engine.queues()).find((q) => q.name === 'default');
      return found?.running === 2 && found.throttled === 2 ? found : undefined;
    });
    expect(queue).toMatchObject({ waiting: 0, throttled: 2, running: 2 });
    expect(queue!.delayed).toBeGreaterThanOrEqual(2);
    expect(queue!.workers.length).toBeGreaterThan(0);
    expect(budget.rate).toBeUndefined();
    const ids = handles.map((handle) => handle.id);
    for (const id of budget.waiting) {
      expect(ids).toContain(id);
      expect((await h.engine.get(id))?.status).toBe('throttled');
    }
    await drain(h, token, 4, 2, []);
    for (const handle of handles) expect((await handle.result()).status).toBe('completed');
    expect((await h.engine.budgets()).find((b) => b.key === 'model')).toMatchObject({ inUse: 0, waiting: [] });
  });

  it('no sliding window ever admits more than rate.max', async () => {
    recordAdmissions();
    const h = await setup('limits-rate', { ...options, autoAdvance: true });
    const token = `rate-${name}`;
    const results = await Promise.all(Array.from({ length: 10 }, () => h.engine.run<S>(rated, { token })));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill('completed'));
    expect(calls.count(token)).toBe(10);
    const at = admissions.get('api')!.sort((a, b) => a - b);
    expect(at).toHaveLength(10);
    for (const start of at) expect(at.filter((t) => t >= start && t < start + 400).length).toBeLessThanOrEqual(3);
  });

  it('a RateLimitedError delays the step without using a try and holds the key back for others', async () => {
    const h = await setup('limits-rate-limited', { ...options, autoAdvance: true });
    const token = `rate-limited-${name}`;
    const result = await h.engine.run<S>(limited, { token });
    expect(result.status).toBe('completed');
    expect(result.shared.result).toBe('ok');
    // Three calls, each the first try (currentRetry 0): a 429 uses no try.
    expect(calls.of(token)).toEqual([0, 0, 0]);
    const info = (await h.engine.get(result.id))!;
    expect(info.errors).toEqual([]);
    const history = await h.engine.history(result.id);
    expect(history[0]).toMatchObject({ node: 'limited', tries: 1 });
  });

  it('a RateLimitedError holds the key back for another node naming it', async () => {
    const h = await setup('limits-hold', options);
    const token = `hold-${name}`;
    const first = await h.engine.start<S>(limited, { token: `${token}-429`, times: 1, retryAfterMs: 1500 });
    await waitFor('the 429', () => calls.count(`${token}-429`) >= 1);
    const other = await h.engine.start<S>(sameKey, { token });
    const waiting = await h.until(other.id, 'the other run throttled', (info) => info.status === 'throttled');
    expect(waiting.throttledBy).toBe('provider');
    expect(calls.count(token)).toBe(0);
    await h.advance(1500);
    expect((await h.engine.result(other.id)).status).toBe('completed');
    expect((await h.engine.result(first.id)).status).toBe('completed');
    expect(calls.count(token)).toBe(1);
  });

  it('a visit parked on a mailbox holds no budget: another run takes the slot meanwhile', async () => {
    const h = await setup('limits-parked', options);
    const token = `parked-${name}`;
    const parked = await h.engine.start<S>(parking, { token });
    await h.until(parked.id, 'the run parked', (info) => info.status === 'waiting');
    const other = await h.engine.run<S>(slotted, { token });
    expect(other.status).toBe('completed');
    await h.engine.send(`inbox-${token}`, 'hello');
    const result = await h.engine.result(parked.id);
    expect(result.status).toBe('completed');
    expect(result.shared.result).toBe('hello');
  });

  it('this.spend corrects the units of the try: later admissions see the real cost', async () => {
    const h = await setup('limits-spend', options);
    const token = `spend-${name}`;
    const result = await h.engine.run<S>(spending, { token, tokens: 400 });
    expect(result.status).toBe('completed');
    const store = (
      h.engine as unknown as { store?: { budgetOf(k: string, p: number): Promise<{ unitsInWindow: number }> } }
    ).store;
    if (store) expect((await store.budgetOf('tokens', 60_000)).unitsInWindow).toBe(400);
  });

  it.each([
    ['the limit is tighter than the fan-out', fanOutTight, 2],
    ['the fan-out is tighter than the limit', fanOutLoose, 3],
  ] as const)('fan-out concurrency and a concurrency limit are both honoured: %s', async (_what, flow, cap) => {
    const h = await setup(`limits-${flow.name}`, options);
    const token = `${flow.name}-${name}`;
    const handle = await h.engine.start<S>(flow, { token });
    await drain(h, token, 6, cap, []);
    expect((await h.engine.result(handle.id)).status).toBe('completed');
    expect(inFlight.get(token)!.max).toBe(cap);
  });
});

describe('limits options', () => {
  it.each([
    [[{ key: '', concurrency: 1 }], /limits\[0\]\.key/],
    [[{ key: 'a' }], /limits\[0\].*`concurrency`, `rate` or both/],
    [[{ key: 'a', concurrency: 0 }], /limits\[0\]\.concurrency.*got `0` \(number\)/],
    [[{ key: 'a', rate: { max: 5, perMs: 1.5 } }], /limits\[0\]\.rate\.perMs.*in ms.*got `1\.5`/],
    [
      [
        { key: 'a', concurrency: 1 },
        { key: 'a', rate: { max: 1, perMs: 1 } },
      ],
      /limits\[1\]\.key.*not named twice/,
    ],
    [[{ key: 'a', concurrency: 1, cost: 3 }], /limits\[0\]\.cost.*function/],
    ['model', /expected `limits` to be an array/],
  ])('refuses %j naming the value', (limits, message) => {
    expect(() => new Node({ limits: limits as unknown as Limit[] })).toThrow(message);
  });

  it('RateLimitedError refuses a bad retryAfterMs', () => {
    expect(() => new RateLimitedError('x', { retryAfterMs: -1 })).toThrow(/retryAfterMs.*got `-1`/);
  });
});
