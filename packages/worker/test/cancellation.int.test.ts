/**
 * RedisEngine contract: cancellation (issue 3 item 5). `cancel(runId)` stops a run at its next
 * step boundary and its status becomes `cancelled`: at once for a step parked in a retry backoff,
 * at the end of the step for an exec in flight (whose `this.signal` aborts), and a cancelled
 * ParallelBatchFlow parent cancels its children. Unknown ids throw RUN_NOT_FOUND; a finished run
 * is left as it is.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow } from '@queueflow/runtime';
import { waitFor } from '../../../tests/support/wait-for.js';
import { aborted, gate, Tally, useHarness, within, type Gate } from './harness.js';

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

const backoff = defineFlow('cancel-backoff', () => new Flow(new Backoff()));
const stubborn = defineFlow('cancel-stubborn', () => {
  const work = new Stubborn({ name: 'work' });
  work.next(new After({ name: 'after' }));
  return new Flow(work);
});
const obedient = defineFlow('cancel-obedient', () => {
  const work = new Obedient({ name: 'work' });
  work.next(new After({ name: 'after' }));
  return new Flow(work);
});
const fan = defineFlow('cancel-fan', () => {
  const batch = new Fan(new Child({ name: 'child' }), { name: 'fan' });
  batch.next(new After({ name: 'after' }));
  return new Flow(batch);
});
const done = defineFlow('cancel-done', () => new Flow(new Done({ name: 'done' })));
const flows = [backoff, stubborn, obedient, fan, done];

describe('RedisEngine: cancellation', () => {
  const setup = useHarness();

  it('cancels a run parked in a long retry backoff promptly, without another try', async () => {
    const { engine, until, keys, redis } = await setup('cancel-backoff', { flows });
    const token = 'backoff';
    const handle = await engine.start(backoff, { token });
    await until(handle.id, 'the first try to fail', (info) => info.attempts === 1);

    await engine.cancel(handle.id);
    // The retry would run in 60 s: the cancel must not wait for it.
    const result = await within(handle.result(), 10_000, 'the cancel waited for the retry backoff');
    expect(result.status).toBe('cancelled');
    expect(execs.of(token)).toEqual([0]);
    const info = await engine.get(handle.id);
    expect(info).toMatchObject({ status: 'cancelled' });
    expect(info?.finishedAt).toBeGreaterThanOrEqual(info!.createdAt);
    expect(await redis.ttl(keys.run(handle.id))).toBeGreaterThan(0); // kept for the retention, then gone
  });

  it("stops a run whose exec is in flight at the end of the step, and aborts the exec's this.signal", async () => {
    const { engine, until } = await setup('cancel-inflight', { flows });
    const token = 'stubborn';
    gates.set(token, gate());
    const handle = await engine.start(stubborn, { token });
    await waitFor('exec to start', () => execs.count(token) === 1);

    await engine.cancel(handle.id);
    await waitFor("exec's signal to abort", () => abortCodes.count(token) === 1);
    expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED']);
    gates.get(token)!.open(); // exec ignores its signal and finishes: the step ends

    const result = await within(handle.result(), 10_000, 'the run did not stop after its step');
    expect(result.status).toBe('cancelled');
    expect(after.count(token)).toBe(0); // the next step never ran
    await until(handle.id, 'the record to say cancelled', (info) => info.status === 'cancelled');
  });

  it('cancels promptly when the exec in flight honours this.signal', async () => {
    const { engine } = await setup('cancel-obedient', { flows });
    const token = 'obedient';
    const handle = await engine.start(obedient, { token });
    await waitFor('exec to start', () => execs.count(token) === 1);

    await engine.cancel(handle.id);
    const result = await within(handle.result(), 10_000, 'the cancelled run did not end');
    expect(result.status).toBe('cancelled');
    expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED']);
    expect(execs.of(token)).toEqual([0]);
    expect(after.count(token)).toBe(0);
  });

  it('cancels the children of a cancelled ParallelBatchFlow parent', async () => {
    const { engine, until } = await setup('cancel-fan', { flows, concurrency: 4 });
    const token = 'fan';
    const handle = await engine.start(fan, { token });
    await waitFor('the three children to be in exec', () => execs.count(token) === 3);
    const waiting = await until(handle.id, 'the parent to wait on its children', (info) => info.status === 'waiting');
    expect(waiting.children).toMatchObject({ total: 3, ended: 0 });
    // Child runs are `<parent id>.<parent step>.<index>` (fan-out.lua).
    const childIds = [0, 1, 2].map((i) => `${handle.id}.${waiting.steps}.${i}`);
    for (const id of childIds) expect((await engine.get(id))?.parentId).toBe(handle.id);

    await engine.cancel(handle.id);
    const result = await within(handle.result(), 10_000, 'the cancelled parent did not end');
    expect(result.status).toBe('cancelled');
    for (const id of childIds) await until(id, `child ${id} to be cancelled`, (info) => info.status === 'cancelled');
    expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED', 'RUN_CANCELLED', 'RUN_CANCELLED']);
    expect(after.count(token)).toBe(0);
  });

  it('throws RUN_NOT_FOUND for an unknown run id', async () => {
    const { engine } = await setup('cancel-unknown', { flows });
    await expect(engine.cancel('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });

  it('leaves a finished run as it is', async () => {
    const { engine } = await setup('cancel-finished', { flows });
    const result = await engine.run(done, {});
    expect(result.status).toBe('completed');
    const before = await engine.get(result.id);

    await engine.cancel(result.id);
    expect(await engine.get(result.id)).toEqual(before);
    expect(await engine.run(done, {})).toMatchObject({ status: 'completed' }); // the engine goes on as usual
    expect(await within(engine.result(result.id), 5000, 'result() hung')).toEqual(result);
  });

  it('cancels a queued run that no worker has taken yet, and its step never runs', async () => {
    const { engine, worker } = await setup('cancel-queued', { flows, workers: 0 });
    const token = 'queued';
    const handle = await engine.start(obedient, { token });
    expect((await engine.get(handle.id))?.status).toBe('queued');

    await engine.cancel(handle.id);
    const result = await within(handle.result(), 5000, 'the queued run was not cancelled without a worker');
    expect(result.status).toBe('cancelled');
    await worker();
    await engine.run(done, {}); // a worker has taken (and dropped) the queued step by now
    expect(execs.count(token)).toBe(0);
  });
});
