/**
 * RedisEngine contract: retry and backoff on BullMQ attempts (DESIGN "Retry and backoff", issue 3
 * item 3). `currentRetry` is the attempt index inside exec, `execFallback` runs on the final
 * attempt, `prep` is not re-run for a retry, the error history stays on the run, a node's
 * exponential backoff with jitter is what the worker's BullMQ backoff strategy returns, and a step
 * waiting between tries holds no worker slot.
 */
import { describe, expect, it, vi } from 'vitest';
import { backoffDelayMs, defineFlow, Flow, Node, type NodeOptions } from '@queueflow/runtime';
import { RetryStep, stepBackoff } from '../src/retry-step.js';
import { Tally, useHarness } from './harness.js';

/** Every call BullMQ makes to the worker's backoff strategy, with what it returned. */
const backoff = vi.hoisted(() => ({
  calls: [] as { attemptsMade: number; node: string | undefined; retryDelayMs: number | undefined; delay: number }[],
}));

vi.mock('../src/retry-step.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/retry-step.js')>();
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
    private readonly succeedOn?: number,
    private readonly fallback?: string,
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
    if (this.succeedOn === undefined || this.currentRetry < this.succeedOn) throw new Error(`try ${this.currentRetry} failed`);
    return this.currentRetry;
  }
  override execFallback(token: string, error: Error): unknown {
    fallbacks.add(token, { currentRetry: this.currentRetry, message: error.message });
    if (this.fallback === undefined) throw error;
    return this.fallback;
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

const allFail = defineFlow('all-fail', () => new Flow(new Flaky({ name: 'flaky', maxRetries: 3 })));
const fallsBack = defineFlow('falls-back', () => new Flow(new Flaky({ name: 'flaky', maxRetries: 3 }, undefined, 'fallback')));
const thirdTime = defineFlow('third-time', () => new Flow(new Flaky({ name: 'flaky', maxRetries: 3 }, 2)));
const jittered = defineFlow('jittered', () =>
  new Flow(new Flaky({ name: 'jittered', maxRetries: 4, wait: 0.05, backoff: { type: 'exponential', jitter: 0.5 } }, 3)),
);
const capped = defineFlow('capped', () =>
  new Flow(new Flaky({ name: 'capped', maxRetries: 4, wait: 0.02, backoff: { type: 'exponential', maxDelayMs: 50 } }, 3)),
);
const slowRetry = defineFlow('slow-retry', () => new Flow(new Flaky({ name: 'slow', maxRetries: 2, wait: 3 }, 1)));
const quick = defineFlow('quick', () => new Flow(new Quick({ name: 'quick' })));
const flows = [allFail, fallsBack, thirdTime, jittered, capped, slowRetry, quick];

describe('RedisEngine: retry and backoff on BullMQ attempts', () => {
  const setup = useHarness();

  it('gives exec its 0-based attempt index as currentRetry and runs execFallback once, on the final attempt', async () => {
    const { engine } = await setup('retry-fallback', { flows });
    const token = 'fallback-final';
    const result = await engine.run<S>(fallsBack, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(tries.of(token)).toEqual([0, 1, 2]);
    expect(fallbacks.of(token)).toEqual([{ currentRetry: 2, message: 'try 2 failed' }]);
    expect(result.shared.result).toBe('fallback');
  });

  it('resumes a retry after the failed try without re-running prep', async () => {
    const { engine } = await setup('retry-prep', { flows });
    const token = 'prep-once';
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
    const token = 'all-fail';
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
    const result = await engine.run<S>(fallsBack, { token: 'fallback-history' });
    expect(result.status).toBe('completed');
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => [e.node, e.attempt])).toEqual([
      ['flaky', 0],
      ['flaky', 1],
      ['flaky', 2],
    ]);
  });

  it("waits between tries for the delays of the node's exponential backoff with jitter", async () => {
    const { engine } = await setup('retry-jitter', { flows });
    const token = 'jitter';
    const result = await engine.run<S>(jittered, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(tries.of(token)).toEqual([0, 1, 2, 3]);

    const calls = backoff.calls.filter((call) => call.node === 'jittered');
    expect(calls.map((call) => call.attemptsMade)).toEqual([1, 2, 3]);
    calls.forEach((call, k) => {
      // BullMQ waits exactly what the strategy returns: the node's delay for failed try k.
      expect(call.delay).toBe(call.retryDelayMs);
      const full = 50 * 2 ** k; // wait 0.05 s doubled per failed try
      expect(call.delay).toBeGreaterThanOrEqual(full * 0.5); // jitter 0.5 takes off up to half
      expect(call.delay).toBeLessThanOrEqual(full);
    });
  });

  it('caps exponential delays at maxDelayMs (no jitter: exact delays)', async () => {
    const { engine } = await setup('retry-cap', { flows });
    const result = await engine.run<S>(capped, { token: 'capped' });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    const calls = backoff.calls.filter((call) => call.node === 'capped');
    expect(calls.map((call) => call.delay)).toEqual([20, 40, 50]);
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

  it('holds no worker slot while a step waits between tries', async () => {
    const { engine, until } = await setup('retry-slot', { flows, concurrency: 1 });
    const order: string[] = [];
    const a = await engine.start<S>(slowRetry, { token: 'slot-a' });
    const aDone = a.result().then((r) => (order.push('A'), r));
    // A's first try failed and was committed; its step now waits 3 s in the delayed set.
    await until(a.id, 'run A to fail its first try', (info) => info.attempts === 1);

    const b = await engine.start<S>(quick, {});
    const bResult = await b.result();
    order.push('B');
    expect(bResult.status).toBe('completed');
    const aWhileB = await engine.get(a.id);
    expect(aWhileB).toMatchObject({ status: 'running', attempts: 1, steps: 0, currentNode: 'slow' });
    expect(tries.of('slot-a')).toEqual([0]);

    const aResult = await aDone;
    expect(aResult.status, JSON.stringify(aResult.error)).toBe('completed');
    expect(aResult.shared.result).toBe(1);
    expect(order).toEqual(['B', 'A']);
  });
});
