/**
 * LocalEngine contract: retry and backoff (DESIGN "Retry and backoff", rules S2/S3 on the
 * engine) and per-node `timeoutMs`. Retry delays go through an injected clock: the test reads the
 * delays asked for and moves time on itself.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node, type NodeOptions } from '../src/index.js';
import { FakeClock, until } from './fake-clock.js';

type S = Record<string, any>;

/** What node code did, by token (each test uses its own). */
const log = {
  tries: new Map<string, number[]>(),
  preps: new Map<string, number>(),
  fallbacks: new Map<string, { currentRetry: number; message: string; code?: string }[]>(),
};
function push<T>(map: Map<string, T[]>, key: string, value: T): void {
  map.set(key, [...(map.get(key) ?? []), value]);
}

/**
 * Fails its tries before `succeedOn` (never, when unset) with `try <n> failed`; with `hang`, a
 * failing try waits for its signal to abort (a timeout) instead of throwing at once.
 */
class Flaky extends Node<S> {
  constructor(
    options: NodeOptions,
    private readonly behaviour: { succeedOn?: number; fallback?: string; hang?: boolean } = {},
  ) {
    super(options);
  }
  override prep(shared: S): string {
    shared.prepCalls = (shared.prepCalls ?? 0) + 1;
    log.preps.set(shared.token as string, (log.preps.get(shared.token as string) ?? 0) + 1);
    return shared.token as string;
  }
  override async exec(token: string): Promise<number> {
    push(log.tries, token, this.currentRetry);
    const { succeedOn } = this.behaviour;
    if (succeedOn !== undefined && this.currentRetry >= succeedOn) return this.currentRetry;
    if (this.behaviour.hang) {
      const signal = this.signal!;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      throw signal.reason;
    }
    throw new Error(`try ${this.currentRetry} failed`);
  }
  override execFallback(token: string, error: Error): unknown {
    push(log.fallbacks, token, { currentRetry: this.currentRetry, message: error.message, code: (error as { code?: string }).code });
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
const allFail = one('all-fail', () => new Flaky({ name: 'flaky', maxRetries: 3, wait: 2 }));
const fallsBack = one('falls-back', () => new Flaky({ name: 'flaky', maxRetries: 3 }, { fallback: 'fallback' }));
const thirdTime = one('third-time', () => new Flaky({ name: 'flaky', maxRetries: 3 }, { succeedOn: 2 }));
const jittered = one('jittered', () =>
  new Flaky({ name: 'jittered', maxRetries: 4, wait: 1, backoff: { type: 'exponential', jitter: 0.5 } }, { succeedOn: 3 }),
);
const capped = one('capped', () =>
  new Flaky({ name: 'capped', maxRetries: 4, wait: 1, backoff: { type: 'exponential', maxDelayMs: 3000 } }, { succeedOn: 3 }),
);
const slowRetry = one('slow-retry', () => new Flaky({ name: 'slow', maxRetries: 2, wait: 3 }, { succeedOn: 1 }));
const quick = one('quick', () => new Quick({ name: 'quick' }));
const timeoutRetried = one('timeout-retried', () => new Flaky({ name: 'slow', maxRetries: 2, timeoutMs: 20 }, { succeedOn: 1, hang: true }));
const timeoutFallback = one('timeout-fallback', () =>
  new Flaky({ name: 'slow', maxRetries: 2, timeoutMs: 20 }, { fallback: 'fallback', hang: true }),
);
const timeoutFailed = one('timeout-failed', () => new Flaky({ name: 'slow', maxRetries: 2, timeoutMs: 20 }, { hang: true }));
const flows = [allFail, fallsBack, thirdTime, jittered, capped, slowRetry, quick, timeoutRetried, timeoutFallback, timeoutFailed];

describe('LocalEngine: retry and backoff', () => {
  let engine: LocalEngine | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await engine?.close();
    engine = undefined;
  });
  const open = (options: { concurrency?: number } = {}): { engine: LocalEngine; clock: FakeClock } => {
    const clock = new FakeClock();
    engine = new LocalEngine({ flows, clock, ...options });
    return { engine, clock };
  };

  it('gives exec its 0-based attempt index as currentRetry and runs execFallback once, on the final attempt', async () => {
    const { engine } = open();
    const result = await engine.run<S>(fallsBack, { token: 'fallback' });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(log.tries.get('fallback')).toEqual([0, 1, 2]);
    expect(log.fallbacks.get('fallback')).toEqual([{ currentRetry: 2, message: 'try 2 failed' }]);
    expect(result.shared.result).toBe('fallback');
  });

  it('resumes a retry after the failed try without re-running prep', async () => {
    const { engine } = open();
    const result = await engine.run<S>(thirdTime, { token: 'prep' });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(log.tries.get('prep')).toEqual([0, 1, 2]);
    expect(result.shared.result).toBe(2);
    expect(result.shared.prepCalls).toBe(1);
    expect(log.preps.get('prep')).toBe(1);
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => ({ node: e.node, attempt: e.attempt, message: e.message }))).toEqual([
      { node: 'flaky', attempt: 0, message: 'try 0 failed' },
      { node: 'flaky', attempt: 1, message: 'try 1 failed' },
    ]);
  });

  it('waits `wait` seconds between tries through the clock, not after the last, then fails with every try recorded', async () => {
    const { engine, clock } = open();
    const handle = await engine.start<S>(allFail, { token: 'fail' });
    await until('the first retry delay', () => clock.pending().length === 1);
    expect(log.tries.get('fail')).toEqual([0]);
    clock.advance(1999);
    expect(clock.pending()).toEqual([2000]); // not due yet
    clock.advance(1);
    await until('the second retry delay', () => clock.pending().length === 1 && log.tries.get('fail')?.length === 2);
    clock.advance(2000);
    const result = await handle.result();
    expect(clock.requested).toEqual([2000, 2000]);
    expect(clock.pending()).toEqual([]);
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ node: 'flaky', attempts: 3, message: 'try 2 failed' });
    expect(log.preps.get('fail')).toBe(1);
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => [e.node, e.attempt])).toEqual([
      ['flaky', 0],
      ['flaky', 1],
      ['flaky', 2],
    ]);
  });

  it('keeps the final failed try in the error history when execFallback rescues it', async () => {
    const { engine } = open();
    const result = await engine.run<S>(fallsBack, { token: 'history' });
    expect(result.status).toBe('completed');
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => [e.node, e.attempt])).toEqual([
      ['flaky', 0],
      ['flaky', 1],
      ['flaky', 2],
    ]);
  });

  it("waits the delays of the node's exponential backoff with jitter", async () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.25);
    const { engine, clock } = open();
    const handle = await engine.start<S>(jittered, { token: 'jitter' });
    for (let k = 0; k < 3; k++) {
      await until(`retry delay ${k}`, () => clock.pending().length === 1);
      clock.advance(clock.pending()[0]!);
    }
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    // 1 s doubled per failed try, less jitter 0.5 × (1 − 0.25) of it.
    expect(clock.requested).toEqual([625, 1250, 2500]);
    expect(log.tries.get('jitter')).toEqual([0, 1, 2, 3]);
  });

  it('caps exponential delays at maxDelayMs', async () => {
    const { engine, clock } = open();
    const handle = await engine.start<S>(capped, { token: 'capped' });
    for (let k = 0; k < 3; k++) {
      await until(`retry delay ${k}`, () => clock.pending().length === 1);
      clock.advance(clock.pending()[0]!);
    }
    expect((await handle.result()).status).toBe('completed');
    expect(clock.requested).toEqual([1000, 2000, 3000]);
  });

  it('holds no slot while a step waits between tries', async () => {
    const { engine, clock } = open({ concurrency: 1 });
    const order: string[] = [];
    const a = await engine.start<S>(slowRetry, { token: 'slot-a' });
    const aDone = a.result().then((r) => (order.push('A'), r));
    await until('run A to wait for its retry', () => clock.pending().length === 1);
    expect(await engine.get(a.id)).toMatchObject({ status: 'running', attempts: 1, steps: 0 });

    const b = await engine.start<S>(quick, {});
    expect((await b.result()).status).toBe('completed');
    order.push('B');
    expect(await engine.get(a.id)).toMatchObject({ status: 'running', attempts: 1, steps: 0, currentNode: 'slow' });
    expect(log.tries.get('slot-a')).toEqual([0]);

    clock.advance(3000);
    const aResult = await aDone;
    expect(aResult.status, JSON.stringify(aResult.error)).toBe('completed');
    expect(aResult.shared.result).toBe(1);
    expect(order).toEqual(['B', 'A']);
  });
});

describe('LocalEngine: per-node timeoutMs', () => {
  let engine: LocalEngine | undefined;
  afterEach(async () => {
    await engine?.close();
    engine = undefined;
  });

  it('counts an exec over time as a failed attempt (NODE_TIMEOUT), then retries', async () => {
    engine = new LocalEngine({ flows, clock: new FakeClock() });
    const result = await engine.run<S>(timeoutRetried, { token: 'timeout-retry' });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.result).toBe(1);
    expect(log.tries.get('timeout-retry')).toEqual([0, 1]);
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => ({ code: e.code, node: e.node, attempt: e.attempt }))).toEqual([
      { code: 'NODE_TIMEOUT', node: 'slow', attempt: 0 },
    ]);
  });

  it('runs execFallback with the timeout error after the last try timed out', async () => {
    engine = new LocalEngine({ flows, clock: new FakeClock() });
    const result = await engine.run<S>(timeoutFallback, { token: 'timeout-fallback' });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.result).toBe('fallback');
    expect(log.fallbacks.get('timeout-fallback')).toEqual([{ currentRetry: 1, message: expect.any(String), code: 'NODE_TIMEOUT' }]);
  });

  it('fails the run with NODE_TIMEOUT when every try timed out and there is no fallback', async () => {
    engine = new LocalEngine({ flows, clock: new FakeClock() });
    const result = await engine.run<S>(timeoutFailed, { token: 'timeout-failed' });
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'NODE_TIMEOUT', node: 'slow', attempts: 2 });
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => [e.code, e.attempt])).toEqual([
      ['NODE_TIMEOUT', 0],
      ['NODE_TIMEOUT', 1],
    ]);
  });
});
