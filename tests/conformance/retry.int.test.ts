/**
 * Contract: retry and backoff (DESIGN "Retry and backoff", rules S2/S3 on an engine).
 * `currentRetry` is the attempt index inside exec, `execFallback` runs on the final attempt, `prep`
 * is not re-run for a retry, the error history stays on the run, the node's backoff delays are
 * waited between tries, and a step waiting between tries holds no slot.
 *
 * How each engine waits: LocalEngine sets a timer on its injected clock (the test reads the delays
 * asked for and moves time on itself); RedisEngine commits the failed try and BullMQ moves the job
 * to its delayed set for what the worker's backoff strategy returns (spied on below).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { backoffDelayMs, defineFlow, Flow, Node, type NodeOptions } from '@queueflow/runtime';
// The worker's BullMQ backoff strategy is internal to its package: reached by path, in the build
// that `@queueflow/worker` loads, so the spy below sees the calls BullMQ makes.
import { RetryStep, stepBackoff } from '../../packages/worker/dist/retry-step.js';
import type * as RetryStepModule from '../../packages/worker/dist/retry-step.js';
import { Tally } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine, useLocalEngine, type EngineHarness } from './engine-harness.js';

/** Every call BullMQ makes to the worker's backoff strategy, with what it returned. */
const backoff = vi.hoisted(() => ({
  calls: [] as { attemptsMade: number; node: string | undefined; retryDelayMs: number | undefined; delay: number }[],
}));

vi.mock('../../packages/worker/dist/retry-step.js', async (importOriginal) => {
  const original = await importOriginal<typeof RetryStepModule>();
  return {
    ...original,
    stepBackoff: (attemptsMade: number, type?: string, error?: Error): number => {
      const delay = original.stepBackoff(attemptsMade, type, error);
      const retry = error instanceof original.RetryStep ? error : undefined;
      backoff.calls.push({ attemptsMade, node: retry?.record.node, retryDelayMs: retry?.retryDelayMs, delay });
      return delay;
    },
  };
});

type S = Record<string, any>;

const tries = new Tally<number>();
const preps = new Tally<number>();
const fallbacks = new Tally<{ currentRetry: number; message: string }>();

/**
 * Fails its tries before `succeedOn` (never, when unset) with `try <n> failed`. `prep` counts
 * itself in `shared.prepCalls` and in {@link preps}; `exec` records `currentRetry` in
 * {@link tries}; `post` stores `execRes` in `shared.result`.
 */
class Flaky extends Node<S> {
  constructor(
    options: NodeOptions,
    private readonly behaviour: { succeedOn?: number; fallback?: string } = {},
  ) {
    super(options);
  }
  override prep(shared: S): string {
    shared.prepCalls = (shared.prepCalls ?? 0) + 1;
    preps.add(shared.token as string, 1);
    return shared.token as string;
  }
  override exec(token: string): number {
    tries.add(token, this.currentRetry);
    const { succeedOn } = this.behaviour;
    if (succeedOn !== undefined && this.currentRetry >= succeedOn) return this.currentRetry;
    throw new Error(`try ${this.currentRetry} failed`);
  }
  override execFallback(token: string, error: Error): unknown {
    fallbacks.add(token, { currentRetry: this.currentRetry, message: error.message });
    if (this.behaviour.fallback === undefined) throw error;
    return this.behaviour.fallback;
  }
  override post(shared: S, _prepRes: unknown, execRes: unknown): void {
    shared.result = execRes;
  }
}

class Quick extends Node<S> {
  override post(shared: S): void {
    shared.quick = true;
  }
}

const one = (name: string, node: () => Node<S>) => defineFlow(name, () => new Flow(node()));
const allFail = one('all-fail', () => new Flaky({ name: 'flaky', maxRetries: 3 }));
const fallsBack = one('falls-back', () => new Flaky({ name: 'flaky', maxRetries: 3 }, { fallback: 'fallback' }));
const thirdTime = one('third-time', () => new Flaky({ name: 'flaky', maxRetries: 3 }, { succeedOn: 2 }));
const jittered = one(
  'jittered',
  () =>
    new Flaky(
      { name: 'jittered', maxRetries: 4, wait: 0.05, backoff: { type: 'exponential', jitter: 0.5 } },
      { succeedOn: 3 },
    ),
);
const capped = one(
  'capped',
  () =>
    new Flaky(
      { name: 'capped', maxRetries: 4, wait: 0.02, backoff: { type: 'exponential', maxDelayMs: 50 } },
      { succeedOn: 3 },
    ),
);
const slowRetry = one('slow-retry', () => new Flaky({ name: 'slow', maxRetries: 2, wait: 3 }, { succeedOn: 1 }));
const quick = one('quick', () => new Quick({ name: 'quick' }));
// Whole seconds, for the LocalEngine clock tests: no real time passes there.
const allFailWaiting = one('all-fail-waiting', () => new Flaky({ name: 'flaky', maxRetries: 3, wait: 2 }));
const jitteredSeconds = one(
  'jittered-seconds',
  () =>
    new Flaky(
      { name: 'jittered', maxRetries: 4, wait: 1, backoff: { type: 'exponential', jitter: 0.5 } },
      { succeedOn: 3 },
    ),
);
const flows = [allFail, fallsBack, thirdTime, jittered, capped, slowRetry, quick, allFailWaiting, jitteredSeconds];

/**
 * The delays the engine waited between the tries of `node`: LocalEngine asked its clock for them;
 * RedisEngine's BullMQ asked the worker's backoff strategy.
 */
function retryDelays({ clock }: EngineHarness, node: string): number[] {
  return clock ? clock.requested : backoff.calls.filter((call) => call.node === node).map((call) => call.delay);
}

beforeEach(() => {
  backoff.calls.length = 0;
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(engines)('%s: retry and backoff', (name) => {
  const setup = useEngine(name);

  it('gives exec its 0-based attempt index as currentRetry and runs execFallback once, on the final attempt', async () => {
    const { engine } = await setup('retry-fallback', { flows });
    const token = `fallback-final-${name}`;
    const result = await engine.run<S>(fallsBack, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(tries.of(token)).toEqual([0, 1, 2]);
    expect(fallbacks.of(token)).toEqual([{ currentRetry: 2, message: 'try 2 failed' }]);
    expect(result.shared.result).toBe('fallback');
  });

  it('resumes a retry after the failed try without re-running prep', async () => {
    const { engine } = await setup('retry-prep', { flows });
    const token = `prep-once-${name}`;
    const result = await engine.run<S>(thirdTime, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(tries.of(token)).toEqual([0, 1, 2]);
    expect(result.shared.result).toBe(2); // exec's value on the try that succeeded
    expect(result.shared.prepCalls).toBe(1); // prep's change to shared, made once
    expect(preps.count(token)).toBe(1); // prep itself, called once
    expect(fallbacks.count(token)).toBe(0);

    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => ({ node: e.node, attempt: e.attempt, message: e.message }))).toEqual([
      { node: 'flaky', attempt: 0, message: 'try 0 failed' },
      { node: 'flaky', attempt: 1, message: 'try 1 failed' },
    ]);
  });

  it('fails the run after the last try, with every failed try in the error history', async () => {
    const { engine } = await setup('retry-fail', { flows });
    const token = `all-fail-${name}`;
    const result = await engine.run<S>(allFail, { token });
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ node: 'flaky', attempts: 3, message: 'try 2 failed' });
    expect(tries.of(token)).toEqual([0, 1, 2]);
    expect(preps.count(token)).toBe(1);
    expect(fallbacks.of(token)).toEqual([{ currentRetry: 2, message: 'try 2 failed' }]);

    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => ({ node: e.node, attempt: e.attempt, message: e.message }))).toEqual([
      { node: 'flaky', attempt: 0, message: 'try 0 failed' },
      { node: 'flaky', attempt: 1, message: 'try 1 failed' },
      { node: 'flaky', attempt: 2, message: 'try 2 failed' },
    ]);
  });

  it('keeps the final failed try in the error history when execFallback rescues it', async () => {
    const { engine } = await setup('retry-history', { flows });
    const result = await engine.run<S>(fallsBack, { token: `fallback-history-${name}` });
    expect(result.status).toBe('completed');
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => [e.node, e.attempt])).toEqual([
      ['flaky', 0],
      ['flaky', 1],
      ['flaky', 2],
    ]);
  });

  it("waits between tries for the delays of the node's exponential backoff with jitter", async () => {
    const harness = await setup('retry-jitter', { flows, autoAdvance: true });
    const token = `jitter-${name}`;
    const result = await harness.engine.run<S>(jittered, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(tries.of(token)).toEqual([0, 1, 2, 3]);

    const delays = retryDelays(harness, 'jittered');
    expect(delays).toHaveLength(3);
    delays.forEach((delay, k) => {
      const full = 50 * 2 ** k; // wait 0.05 s doubled per failed try
      expect(delay).toBeGreaterThanOrEqual(full * 0.5); // jitter 0.5 takes off up to half
      expect(delay).toBeLessThanOrEqual(full);
    });
  });

  it('caps exponential delays at maxDelayMs (no jitter: exact delays)', async () => {
    const harness = await setup('retry-cap', { flows, autoAdvance: true });
    const result = await harness.engine.run<S>(capped, { token: `capped-${name}` });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(retryDelays(harness, 'capped')).toEqual([20, 40, 50]);
  });

  it('holds no slot while a step waits between tries', async () => {
    const { engine, until, advance, clock } = await setup('retry-slot', { flows, concurrency: 1 });
    const token = `slot-a-${name}`;
    const order: string[] = [];
    const a = await engine.start<S>(slowRetry, { token });
    const aDone = a.result().then((r) => (order.push('A'), r));
    // A's first try failed and was committed; its step now waits 3 s (LocalEngine: a timer on its
    // clock; RedisEngine: in BullMQ's delayed set).
    await until(a.id, 'run A to fail its first try', (info) => info.attempts === 1);
    expect(await engine.get(a.id)).toMatchObject({ status: 'running', attempts: 1, steps: 0 });
    if (clock) expect(clock.pending()).toEqual([3000]);

    const b = await engine.start<S>(quick, {});
    const bResult = await b.result();
    order.push('B');
    expect(bResult.status).toBe('completed');
    expect(await engine.get(a.id)).toMatchObject({ status: 'running', attempts: 1, steps: 0, currentNode: 'slow' });
    expect(tries.of(token)).toEqual([0]);

    await advance(3000);
    const aResult = await aDone;
    expect(aResult.status, JSON.stringify(aResult.error)).toBe('completed');
    expect(aResult.shared.result).toBe(1);
    expect(order).toEqual(['B', 'A']);
  });
});

describe('LocalEngine: retry delays on the injected clock', () => {
  const setup = useLocalEngine();

  it('waits `wait` seconds between tries through the clock, not after the last, then fails with every try recorded', async () => {
    const { engine, clock } = await setup('retry-clock', { flows });
    const token = 'fail-on-the-clock';
    const handle = await engine.start<S>(allFailWaiting, { token });
    await waitFor('the first retry delay', () => clock.pending().length === 1);
    expect(tries.of(token)).toEqual([0]);
    clock.advance(1999);
    expect(clock.pending()).toEqual([2000]); // not due yet
    clock.advance(1);
    await waitFor('the second retry delay', () => clock.pending().length === 1 && tries.count(token) === 2);
    clock.advance(2000);
    const result = await handle.result();
    expect(clock.requested).toEqual([2000, 2000]);
    expect(clock.pending()).toEqual([]);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ node: 'flaky', attempts: 3, message: 'try 2 failed' });
    expect(preps.count(token)).toBe(1);
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => [e.node, e.attempt])).toEqual([
      ['flaky', 0],
      ['flaky', 1],
      ['flaky', 2],
    ]);
  });

  it("waits the delays of the node's exponential backoff with jitter", async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.25);
    const { engine, clock } = await setup('retry-clock-jitter', { flows });
    const token = 'jitter-on-the-clock';
    const handle = await engine.start<S>(jitteredSeconds, { token });
    for (let k = 0; k < 3; k++) {
      await waitFor(`retry delay ${k}`, () => clock.pending().length === 1);
      clock.advance(clock.pending()[0]!);
    }
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    // 1 s doubled per failed try, less jitter 0.5 × (1 − 0.25) of it.
    expect(clock.requested).toEqual([625, 1250, 2500]);
    expect(tries.of(token)).toEqual([0, 1, 2, 3]);
  });
});

describe("RedisEngine: retries are BullMQ attempts, delayed by the worker's backoff strategy", () => {
  const setup = useRedisHarness();

  it('BullMQ asks the backoff strategy once per failed try and waits exactly the delay the node computed', async () => {
    const { engine } = await setup('retry-strategy', { flows });
    const result = await engine.run<S>(jittered, { token: 'jitter-on-bullmq' });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');

    const calls = backoff.calls.filter((call) => call.node === 'jittered');
    expect(calls.map((call) => call.attemptsMade)).toEqual([1, 2, 3]);
    // BullMQ waits exactly what the strategy returns: the node's delay for failed try k.
    for (const call of calls) expect(call.delay).toBe(call.retryDelayMs);
  });

  it("the worker's backoff strategy returns the delay the interpreter computed with backoffDelayMs", () => {
    const options = { type: 'exponential', jitter: 0.5 } as const;
    const low = (k: number): number => backoffDelayMs(k, 1, options, () => 0);
    const high = (k: number): number => backoffDelayMs(k, 1, options, () => 0.999999);
    expect([0, 1, 2, 3].map(low)).toEqual([500, 1000, 2000, 4000]);
    expect([0, 1, 2, 3].map(high)).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffDelayMs(1, 1, { type: 'exponential', jitter: 0.5 }, () => 0.5)).toBe(1500);
    expect(backoffDelayMs(3, 2, undefined)).toBe(2000); // fixed `wait`, whatever the try

    const node = new Flaky({ maxRetries: 4, wait: 0.05, backoff: { type: 'exponential', maxDelayMs: 150 } });
    const record = { name: 'Error', message: 'x', retryable: true };
    expect([0, 1, 2].map((k) => stepBackoff(k + 1, 'queueflow', new RetryStep(record, node.retryDelayMs(k))))).toEqual([
      50, 100, 150,
    ]);
  });
});
