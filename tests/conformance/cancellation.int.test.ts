/**
 * Contract: cancellation. `cancel(runId)` stops a run at its next step boundary and its status
 * becomes `cancelled`: at once for a step parked in a retry backoff or a run still queued, at the
 * end of the step for an exec in flight (whose `this.signal` aborts); a cancelled
 * ParallelBatchFlow parent cancels its children. Unknown ids throw RUN_NOT_FOUND; a finished run
 * is left as it is.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow } from '@queueflow/runtime';
import { aborted, gate, Tally, type Gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor, within } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const execs = new Tally<number>();
const after = new Tally<number>();
const abortCodes = new Tally<string | undefined>();
const gates = new Map<string, Gate>();

function codeOf(reason: unknown): string | undefined {
  return (reason as { code?: string } | undefined)?.code;
}

/** Fails its first try; the retry waits 60 s. */
class Backoff extends Node<S> {
  constructor() {
    super({ name: 'backoff', maxRetries: 2, wait: 60 });
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): string {
    execs.add(token, this.currentRetry);
    if (this.currentRetry === 0) throw new Error('first try fails');
    return 'second try';
  }
}

/** Ignores its signal: records it and finishes when the test opens the token's gate. */
class Stubborn extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<string> {
    execs.add(token, this.currentRetry);
    // Not awaited: records the abort whenever it comes; exec itself waits only for its gate.
    void aborted(this.signal).then((reason) => abortCodes.add(token, codeOf(reason)));
    await gates.get(token)!.promise;
    return 'finished anyway';
  }
  override post(shared: S, _prepRes: unknown, execRes: string): void {
    shared.work = execRes;
  }
}

/** Honours its signal: hangs until it aborts, then throws the reason. */
class Obedient extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<never> {
    execs.add(token, this.currentRetry);
    const reason = await aborted(this.signal);
    abortCodes.add(token, codeOf(reason));
    throw reason;
  }
}

class After extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override post(shared: S, token: string): void {
    after.add(token, 1);
    shared.after = true;
  }
}

/** One walk per param set `{ i }`; each walk's node hangs until its signal aborts. */
class Fan extends ParallelBatchFlow<S> {
  override prep(): object[] {
    return [{ i: 0 }, { i: 1 }, { i: 2 }];
  }
}
class Child extends Node<S> {
  override prep(shared: S): string {
    return `${shared.token as string}:${this.params.i as number}`;
  }
  override async exec(key: string): Promise<never> {
    execs.add(key.split(':')[0]!, this.params.i as number);
    const reason = await aborted(this.signal);
    abortCodes.add(key.split(':')[0]!, codeOf(reason));
    throw reason;
  }
}

class Done extends Node<S> {
  override post(shared: S): void {
    shared.done = true;
  }
}

const withAfter = (name: string, first: () => Node<S>) =>
  defineFlow(name, () => {
    const node = first();
    node.next(new After({ name: 'after' }));
    return new Flow(node);
  });
const backoff = defineFlow('cancel-backoff', () => new Flow(new Backoff()));
const stubborn = withAfter('cancel-stubborn', () => new Stubborn({ name: 'work' }));
const obedient = withAfter('cancel-obedient', () => new Obedient({ name: 'work' }));
const fan = defineFlow('cancel-fan', () => {
  const batch = new Fan(new Child({ name: 'child' }), { name: 'fan' });
  batch.next(new After({ name: 'after' }));
  return new Flow(batch);
});
const done = defineFlow('cancel-done', () => new Flow(new Done({ name: 'done' })));
// The obedient step second: its task is added with the first step's commit, before that step's
// task has finished.
const obedientSecond = defineFlow('cancel-obedient-second', () => {
  const first = new Done({ name: 'done' });
  first.next(new Obedient({ name: 'work' }));
  return new Flow(first);
});
const flows = [backoff, stubborn, obedient, fan, done, obedientSecond];

describe.each(engines)('%s: cancellation', (name) => {
  const setup = useEngine(name);
  // Registered after the engine's own cleanup, so it runs first: no exec is left waiting on a gate
  // when the engine (and its workers) close.
  afterEach(() => {
    for (const open of gates.values()) open.open();
  });

  it('cancels a run parked in a retry backoff promptly, without another try', async () => {
    const { engine, until, clock, redis } = await setup('cancel-backoff', { flows });
    const token = `backoff-${name}`;
    const handle = await engine.start(backoff, { token });
    await until(handle.id, 'the first try to fail', (info) => info.attempts === 1);

    await engine.cancel(handle.id);
    expect(await engine.get(handle.id)).toMatchObject({ status: 'cancelled' });
    // The retry would run in 60 s: the cancel must not wait for it.
    const result = await within(handle.result(), 30_000, 'the cancel waited for the retry backoff');
    expect(result.status).toBe('cancelled');
    if (clock) {
      clock.advance(60_000); // the retry's time comes: nothing runs
      await new Promise((resolve) => setImmediate(resolve));
      expect(clock.pending()).toEqual([]);
    }
    expect(execs.of(token)).toEqual([0]);
    const info = await engine.get(handle.id);
    expect(info).toMatchObject({ status: 'cancelled' });
    expect(info?.finishedAt).toBeGreaterThanOrEqual(info!.createdAt);
    if (redis) expect(await redis.connection.ttl(redis.partitions.of(handle.id).run(handle.id))).toBeGreaterThan(0); // kept for the retention, then gone
  });

  it("stops a run whose exec is in flight at the end of the step, and aborts the exec's this.signal", async () => {
    const { engine } = await setup('cancel-inflight', { flows });
    const token = `stubborn-${name}`;
    gates.set(token, gate());
    const handle = await engine.start(stubborn, { token });
    await waitFor('exec to start', () => execs.count(token) === 1);

    await engine.cancel(handle.id);
    await waitFor("exec's signal to abort", () => abortCodes.count(token) === 1);
    expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED']);
    gates.get(token)!.open(); // exec ignores its signal and finishes: the step ends

    const result = await within(handle.result(), 30_000, 'the run did not stop after its step');
    expect(result.status).toBe('cancelled');
    expect(after.count(token)).toBe(0); // the next step never ran
    expect((await engine.get(handle.id))?.status).toBe('cancelled');
  });

  it('cancels promptly when the exec in flight honours this.signal', async () => {
    const { engine } = await setup('cancel-obedient', { flows });
    const token = `obedient-${name}`;
    const handle = await engine.start(obedient, { token });
    await waitFor('exec to start', () => execs.count(token) === 1);

    await engine.cancel(handle.id);
    const result = await within(handle.result(), 30_000, 'the cancelled run did not end');
    expect(result.status).toBe('cancelled');
    // The cancel request reaches the worker by pub/sub, which on a cluster may come after the
    // run's end reached the client (another node, the cluster bus between).
    await waitFor("exec's signal to abort", () => abortCodes.count(token) === 1);
    expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED']);
    expect(execs.of(token)).toEqual([0]);
    expect(after.count(token)).toBe(0);
  });

  it('aborts the exec of a later step too, whose task started while the step before it was finishing', async () => {
    const { engine } = await setup('cancel-second', { flows, concurrency: 4 });
    const token = `second-${name}`;
    const handle = await engine.start(obedientSecond, { token });
    await waitFor('the second step to be in exec', () => execs.count(token) === 1);

    await engine.cancel(handle.id);
    const result = await within(handle.result(), 10_000, 'the cancelled run did not end');
    expect(result.status).toBe('cancelled');
    await waitFor("exec's signal to abort", () => abortCodes.count(token) === 1);
    expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED']);
  });

  it('cancels a queued run at once; its step never runs', async () => {
    const { engine } = await setup('cancel-queued', { flows, concurrency: 1 });
    const blocker = `blocker-${name}`;
    gates.set(blocker, gate());
    const busy = await engine.start(stubborn, { token: blocker });
    await waitFor('the only slot to be taken', () => execs.count(blocker) === 1);
    const token = `queued-${name}`;
    const queued = await engine.start(obedient, { token });
    expect((await engine.get(queued.id))?.status).toBe('queued');

    await engine.cancel(queued.id);
    const result = await within(
      queued.result(),
      30_000,
      'the queued run was not cancelled while the only slot was busy',
    );
    expect(result.status).toBe('cancelled');
    expect((await engine.get(queued.id))?.startedAt).toBeUndefined(); // it never started
    gates.get(blocker)!.open();
    expect((await busy.result()).status).toBe('completed');
    await engine.run(done, {}); // the slot has taken (and dropped) the queued step by now
    expect(execs.count(token)).toBe(0);
  });

  it('cancels the children of a cancelled ParallelBatchFlow parent', async () => {
    const { engine, until, childRuns } = await setup('cancel-fan', { flows, concurrency: 4 });
    const token = `fan-${name}`;
    const handle = await engine.start(fan, { token });
    await waitFor('the three children to be in exec', () => execs.count(token) === 3);
    const waiting = await engine.get(handle.id);
    expect(waiting).toMatchObject({ status: 'waiting', children: { total: 3, ended: 0 } });
    const children = await childRuns(waiting!);
    expect(children).toHaveLength(3);
    for (const id of children) expect((await engine.get(id))?.parentId).toBe(handle.id);
    expect((await engine.list()).map((info) => info.id)).toEqual([handle.id]); // children are seen through their parent

    await engine.cancel(handle.id);
    const result = await within(handle.result(), 30_000, 'the cancelled parent did not end');
    expect(result.status).toBe('cancelled');
    for (const id of children)
      expect((await within(engine.result(id), 30_000, `child ${id} did not end`)).status).toBe('cancelled');
    for (const id of children) await until(id, `child ${id} to be cancelled`, (info) => info.status === 'cancelled');
    await waitFor("the children's exec signals to abort", () => abortCodes.count(token) === 3);
    expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED', 'RUN_CANCELLED', 'RUN_CANCELLED']);
    expect(after.count(token)).toBe(0);
  });

  it('throws RUN_NOT_FOUND for an unknown run id', async () => {
    const { engine } = await setup('cancel-unknown', { flows });
    await expect(engine.cancel('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });

  it('leaves a finished run as it is', async () => {
    const { engine, redis } = await setup('cancel-finished', { flows });
    const result = await engine.run(done, {});
    expect(result.status).toBe('completed');
    const before = await engine.get(result.id);

    await engine.cancel(result.id);
    expect(await engine.get(result.id)).toEqual(before);
    expect(before?.status).toBe('completed');
    expect(await engine.run(done, {})).toMatchObject({ status: 'completed' }); // the engine goes on as usual
    // RedisEngine answers result(runId) for any run id (LocalEngine: a handle's result() only).
    if (redis) expect(await within(redis.engine.result(result.id), 30_000, 'result() hung')).toEqual(result);
  });
});

describe('RedisEngine: cancelling without a worker', () => {
  const setup = useRedisHarness();

  it('cancels a queued run that no worker has taken yet, and its step never runs', async () => {
    const { engine, worker } = await setup('cancel-no-worker', { flows, workers: 0 });
    const token = 'queued-without-worker';
    const handle = await engine.start(obedient, { token });
    expect((await engine.get(handle.id))?.status).toBe('queued');

    await engine.cancel(handle.id);
    const result = await within(handle.result(), 30_000, 'the queued run was not cancelled without a worker');
    expect(result.status).toBe('cancelled');
    await worker();
    await engine.run(done, {}); // a worker has taken (and dropped) the queued step by now
    expect(execs.count(token)).toBe(0);
  });
});
