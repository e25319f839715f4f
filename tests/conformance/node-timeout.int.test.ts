/**
 * Contract: per-node `timeoutMs`. An exec over time is a failed attempt (code NODE_TIMEOUT in the
 * error history, its `this.signal` aborted); then the retry policy and execFallback apply as to
 * any failed try.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type NodeOptions } from '@queueflow/runtime';
import { aborted, Tally } from '../support/node-probes.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const tries = new Tally<number>();
const abortCodes = new Tally<string | undefined>();
const fallbacks = new Tally<{ currentRetry: number; message: string; code: string | undefined }>();

/**
 * Its tries before `fastFrom` hang until their signal aborts (the timeout); later tries answer at
 * once. `execFallback` records the error it got in {@link fallbacks}; `post` stores `execRes` in
 * `shared.result`.
 */
class Slow extends Node<S> {
  constructor(
    options: NodeOptions,
    private readonly fastFrom = Number.POSITIVE_INFINITY,
    private readonly fallback = false,
  ) {
    super(options);
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<string> {
    tries.add(token, this.currentRetry);
    if (this.currentRetry >= this.fastFrom) return `answered on try ${this.currentRetry}`;
    const reason = await aborted(this.signal);
    abortCodes.add(token, (reason as { code?: string } | undefined)?.code);
    throw reason;
  }
  override execFallback(token: string, error: Error): unknown {
    fallbacks.add(token, {
      currentRetry: this.currentRetry,
      message: error.message,
      code: (error as { code?: string }).code,
    });
    if (!this.fallback) throw error;
    return 'fallback';
  }
  override post(shared: S, _prepRes: unknown, execRes: unknown): void {
    shared.result = execRes;
  }
}

const retried = defineFlow(
  'timeout-retried',
  () => new Flow(new Slow({ name: 'slow', maxRetries: 2, timeoutMs: 200 }, 1)),
);
const fellBack = defineFlow(
  'timeout-fallback',
  () => new Flow(new Slow({ name: 'slow', maxRetries: 2, timeoutMs: 200 }, undefined, true)),
);
const failed = defineFlow('timeout-failed', () => new Flow(new Slow({ name: 'slow', maxRetries: 2, timeoutMs: 200 })));
const flows = [retried, fellBack, failed];

describe.each(engines)('%s: per-node timeoutMs', (name) => {
  const setup = useEngine(name);

  it('counts an exec over time as a failed attempt (NODE_TIMEOUT, signal aborted), then retries', async () => {
    const { engine } = await setup('timeout-retry', { flows });
    const token = `retried-${name}`;
    const result = await engine.run<S>(retried, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.result).toBe('answered on try 1');
    expect(tries.of(token)).toEqual([0, 1]);
    expect(abortCodes.of(token)).toEqual(['NODE_TIMEOUT']); // the timed-out try's this.signal aborted
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => ({ code: e.code, node: e.node, attempt: e.attempt }))).toEqual([
      { code: 'NODE_TIMEOUT', node: 'slow', attempt: 0 },
    ]);
  });

  it('runs execFallback with the timeout error after the last try timed out', async () => {
    const { engine } = await setup('timeout-fallback', { flows });
    const token = `fell-back-${name}`;
    const result = await engine.run<S>(fellBack, { token });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.result).toBe('fallback');
    expect(tries.of(token)).toEqual([0, 1]);
    expect(fallbacks.of(token)).toEqual([{ currentRetry: 1, message: expect.any(String), code: 'NODE_TIMEOUT' }]);
    const info = await engine.get(result.id);
    expect(info?.errors[0]).toMatchObject({ code: 'NODE_TIMEOUT', node: 'slow', attempt: 0 });
  });

  it('fails the run with NODE_TIMEOUT when every try timed out and there is no fallback', async () => {
    const { engine } = await setup('timeout-failed', { flows });
    const token = `failed-${name}`;
    const result = await engine.run<S>(failed, { token });
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'NODE_TIMEOUT', node: 'slow', attempts: 2 });
    const info = await engine.get(result.id);
    expect(info?.errors.map((e) => ({ code: e.code, attempt: e.attempt }))).toEqual([
      { code: 'NODE_TIMEOUT', attempt: 0 },
      { code: 'NODE_TIMEOUT', attempt: 1 },
    ]);
  });
});
