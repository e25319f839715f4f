/**
 * Contract: a run's event log (`engine.runEvents`, kernel/run-event.ts), on every engine: the
 * rare transitions are logged by the transition itself, the same entries on LocalEngine, Redis
 * and the cluster. A park names its mailbox and deadline and its wake the message that came (or
 * that its receive timed out); a failed try that is retried names its attempt; a throttled step
 * names its budget key, and its release the same key; a cancel names who cancelled; an operator's
 * retry the status it left; a fork its source. Committed steps log nothing (they are in the step
 * history). An unknown run id is RUN_NOT_FOUND.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, RateLimitedError, type RunEvent } from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

/** Failed tries so far, by token. */
const failures = new Map<string, number>();

/** Waits for a message at `shared.inbox` (up to `shared.timeoutMs`, when set) and keeps its body. */
class Wait extends Node<S> {
  override async prep(shared: S): Promise<unknown> {
    const options = shared.timeoutMs === undefined ? {} : { timeoutMs: shared.timeoutMs as number };
    const message = await this.receive(shared.inbox as string, options);
    return message?.body ?? null;
  }
  override post(shared: S, body: unknown): void {
    shared.got = body;
  }
}

/** Fails its first try (per `shared.token`), then succeeds. */
class FailOnce extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): string {
    const failed = failures.get(token) ?? 0;
    if (failed === 0) {
      failures.set(token, 1);
      throw new Error('first try fails');
    }
    return 'ok';
  }
  override post(shared: S, _p: unknown, execRes: string): void {
    shared.result = execRes;
  }
}

/** Throws RateLimitedError on its first try (per `shared.token`): its step waits for its budget. */
class RateLimitedOnce extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): string {
    if (!failures.has(token)) {
      failures.set(token, 1);
      throw new RateLimitedError('429', { retryAfterMs: 50 });
    }
    return 'ok';
  }
  override post(shared: S, _p: unknown, execRes: string): void {
    shared.result = execRes;
  }
}

const parkThenRetry = defineFlow('events-park', () => {
  const wait = new Wait({ name: 'wait' });
  wait.next(new FailOnce({ name: 'fail-once', maxRetries: 2 }));
  return new Flow(wait);
});
const waitOnly = defineFlow('events-wait', () => new Flow(new Wait({ name: 'wait' })));
const throttled = defineFlow(
  'events-throttled',
  () => new Flow(new RateLimitedOnce({ name: 'limited', limits: [{ key: 'events-key', concurrency: 5 }] })),
);
const flows = [parkThenRetry, waitOnly, throttled];

/** The log without its times, which each engine's clock sets. */
const untimed = (events: RunEvent[]): Omit<RunEvent, 'at'>[] =>
  events.map(({ at, ...event }) => {
    expect(typeof at).toBe('number');
    return event;
  });

describe.each(engines)('%s: run event log', (name) => {
  const setup = useEngine(name);

  it('logs a park on its mailbox, its wake by the message, and a retried try; forks log their source', async () => {
    const { engine, until } = await setup('events-park', { flows, autoAdvance: true });
    const token = `park-${name}-${Math.random()}`;
    const inbox = `events-inbox-${name}`;
    const handle = await engine.start<S>(parkThenRetry, { token, inbox });
    await until(handle.id, 'the run to park', (info) => info.status === 'waiting');
    const messageId = await engine.send(inbox, { hello: 1 });
    const result = await handle.result({ timeoutMs: 20_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');

    const events = await engine.runEvents(handle.id);
    const [parked, woken, retried] = events;
    expect(untimed(events)).toEqual([
      { step: 0, kind: 'parked', addresses: [inbox], deadline: null },
      // On a cluster, a message held in another partition names its address alone.
      name === 'RedisCluster' && woken?.kind === 'woken' && woken.messageId === undefined
        ? { step: 0, kind: 'woken', address: inbox }
        : { step: 0, kind: 'woken', address: inbox, messageId },
      { step: 1, kind: 'retried', attempt: 0, retryAt: expect.any(Number) },
    ]);
    expect(parked!.at).toBeLessThanOrEqual(woken!.at);
    expect(woken!.at).toBeLessThanOrEqual(retried!.at);

    const fork = await engine.fork(handle.id, { step: 1 });
    await fork.result({ timeoutMs: 20_000 });
    expect(untimed(await engine.runEvents(fork.id))).toEqual([
      { step: 0, kind: 'forked', from: { runId: handle.id, step: 1 } },
    ]);
    await expect(engine.runEvents('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });

  it('logs a throttled step and its release by the same budget key', async () => {
    const { engine } = await setup('events-throttled', { flows, autoAdvance: true });
    const handle = await engine.start<S>(throttled, { token: `throttled-${name}-${Math.random()}` });
    const result = await handle.result({ timeoutMs: 20_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(untimed(await engine.runEvents(handle.id))).toEqual([
      { step: 0, kind: 'throttled', key: 'events-key' },
      { step: 0, kind: 'released', key: 'events-key' },
    ]);
  });

  it('logs a cancel by whom, an operator retry, and the wake of a receive that timed out', async () => {
    const { engine, until } = await setup('events-cancel', { flows, autoAdvance: true });
    const inbox = `events-cancel-${name}`;
    const handle = await engine.start<S>(waitOnly, { inbox });
    await until(handle.id, 'the run to park', (info) => info.status === 'waiting');
    await engine.cancel(handle.id, { by: 'a-test' });
    await engine.retry(handle.id);
    await until(handle.id, 'the retried run to park again', (info) => info.status === 'waiting');
    await engine.cancel(handle.id);

    expect(untimed(await engine.runEvents(handle.id))).toEqual([
      { step: 0, kind: 'parked', addresses: [inbox], deadline: null },
      { step: 0, kind: 'cancelled', by: 'a-test' },
      { step: 0, kind: 'operator-retry', status: 'cancelled' },
      // Parked again on the same receive: no new park.
      { step: 0, kind: 'cancelled' },
    ]);

    const timed = await engine.start<S>(waitOnly, { inbox, timeoutMs: 20 });
    const result = await timed.result({ timeoutMs: 20_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    const events = untimed(await engine.runEvents(timed.id));
    expect(events[0]).toEqual({ step: 0, kind: 'parked', addresses: [inbox], deadline: expect.any(Number) });
    // On a cluster, a receive on a mailbox of another partition names that address instead.
    expect(events.slice(1)).toEqual([
      name === 'RedisCluster' && events[1]?.kind === 'woken' && 'address' in events[1]
        ? { step: 0, kind: 'woken', address: inbox }
        : { step: 0, kind: 'woken', timedOut: true },
    ]);
  });
});
