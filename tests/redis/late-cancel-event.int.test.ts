/**
 * A cancel reaches the workers as an event (pub/sub), which can come late: after `engine.retry`
 * has reopened the run and its step has begun on a worker. The event then stops only the steps
 * of the run as it was cancelled (its retry count, StoredRun.retries, rides on the event), never
 * the retry's: stopped, that step would commit nothing and leave the run with no task, a parked
 * run until its park re-check (a minute), any other for good. The events are held here on their
 * way to the worker's step driver (RedisRunEvents' listener), so the late one comes for sure.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineFlow, Flow, Node, type RunEvent } from '@queueflow/runtime';
import { RedisRunEvents } from '@queueflow/worker';
import { useRedisHarness } from '../support/redis-harness.js';
import { aborted, gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';

type S = { token: string; inbox?: string };

/** Per token: each try's signal (Hold), or each prep (GatedWait). */
const tries = new Tally<AbortSignal | undefined>();
/** Per token: opened by the test to let a held try (or the second prep) go on. */
const gates = new Map<string, Gate>();
const gateOf = (token: string): Gate => gates.get(token) ?? gates.set(token, gate()).get(token)!;

/** Its `exec` waits for its gate, or for its abort. */
class Hold extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<string> {
    tries.add(token, this.signal);
    await Promise.race([gateOf(token).promise, aborted(this.signal)]);
    return 'done';
  }
}

/** Receives from `shared.inbox`; its second prep (the retried run's) first waits for its gate. */
class GatedWait extends Node<S> {
  override async prep(shared: S): Promise<unknown> {
    tries.add(shared.token, undefined);
    if (tries.count(shared.token) === 2) await gateOf(shared.token).promise;
    const message = await this.receive(shared.inbox!, {});
    return message?.body ?? null;
  }
}

const holding = defineFlow('late-cancel-hold', () => new Flow(new Hold({ name: 'hold' })));
const waiting = defineFlow('late-cancel-wait', () => new Flow(new GatedWait({ name: 'wait' })));

/**
 * Holds the cancel events the step drivers of workers started from now on get, until released:
 * `held()` says how many wait, `release()` hands them over (the driver aborts at once).
 */
function holdCancelEvents(): { held(): number; release(): void } {
  const queue: (() => void)[] = [];
  const subscribe = RedisRunEvents.prototype.subscribe;
  vi.spyOn(RedisRunEvents.prototype, 'subscribe').mockImplementation(function (this: RedisRunEvents, listener) {
    const cancelled = listener.cancelled;
    if (!cancelled) return subscribe.call(this, listener);
    return subscribe.call(this, {
      ...listener,
      cancelled: (runId, retries) => void queue.push(() => cancelled(runId, retries)),
    });
  });
  return {
    held: () => queue.length,
    release: () => {
      for (const deliver of queue.splice(0)) deliver();
    },
  };
}

const untimed = (events: RunEvent[]): Omit<RunEvent, 'at'>[] => events.map(({ at: _at, ...event }) => event);

describe.each([
  ['RedisEngine', false],
  ['RedisCluster', true],
] as const)('%s: a cancel event that comes after the retry', (name, cluster) => {
  const setup = useRedisHarness();
  afterEach(() => {
    vi.restoreAllMocks();
    for (const held of gates.values()) held.open(); // a failed test's tries end, and its worker closes
  });

  it('stops the cancelled step, not the retried one running beside it', async () => {
    const events = holdCancelEvents();
    const { engine, until } = await setup('late-cancel-step', { flows: [holding], cluster });
    const token = `step-${name}-${Math.random()}`;
    const handle = await engine.start<S>(holding, { token });
    await waitFor('the first try to run', () => tries.count(token) === 1);
    await engine.cancel(handle.id);
    await waitFor('the cancel event to reach the worker', () => events.held() === 1);
    await engine.retry(handle.id);
    await waitFor('the retried run to run its step beside the cancelled one', () => tries.count(token) === 2);

    events.release();
    const [cancelled, retried] = tries.of(token);
    expect(cancelled?.aborted).toBe(true);
    expect(retried?.aborted).toBe(false);
    gateOf(token).open();
    const result = await handle.result({ timeoutMs: 20_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect((await engine.history(handle.id)).map((record) => record.tries)).toEqual([1]);
    await until(handle.id, 'the run to be completed', (info) => info.status === 'completed');
  });

  it('lets a parked run cancelled and retried at once park again at once', async () => {
    const events = holdCancelEvents();
    const { engine, until } = await setup('late-cancel-park', { flows: [waiting], cluster });
    const token = `park-${name}-${Math.random()}`;
    const inbox = `late-cancel-${name}`;
    const handle = await engine.start<S>(waiting, { token, inbox });
    await until(handle.id, 'the run to park', (info) => info.status === 'waiting');
    await engine.cancel(handle.id, { by: 'a-test' });
    await waitFor('the cancel event to reach the worker', () => events.held() === 1);
    await engine.retry(handle.id);
    await waitFor('the retried step to begin', () => tries.count(token) === 2);

    events.release(); // while the retried step runs
    gateOf(token).open();
    // Far below the park re-check (a minute), which alone would find a dropped step's run.
    await until(handle.id, 'the retried run to park again', (info) => info.status === 'waiting', 10_000);
    expect(untimed(await engine.runEvents(handle.id))).toEqual([
      { step: 0, kind: 'parked', addresses: [inbox], deadline: null },
      { step: 0, kind: 'cancelled', by: 'a-test' },
      { step: 0, kind: 'operator-retry', status: 'cancelled' },
    ]);
    await engine.send(inbox, 'hello');
    const result = await handle.result({ timeoutMs: 20_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
  });
});
