/**
 * LocalEngine contract: cancellation. `cancel(runId)` stops a run at its next step boundary:
 * at once for a run parked in a retry backoff or still queued, at the end of the step for an
 * exec in flight (whose `this.signal` aborts); a cancelled ParallelBatchFlow parent cancels its
 * children; unknown ids throw RUN_NOT_FOUND; a finished run is left as it is.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node, ParallelBatchFlow } from '../src/index.js';
import { FakeClock, until } from './fake-clock.js';
import { deferred, flushMacrotask, type Deferred } from './helpers.js';

type S = Record<string, any>;

const execs = new Map<string, number>();
const afters = new Map<string, number>();
const abortCodes = new Map<string, (string | undefined)[]>();
const gates = new Map<string, Deferred<void>>();
const bump = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1);
const codeOf = (reason: unknown): string | undefined => (reason as { code?: string } | undefined)?.code;
const onAbort = (signal: AbortSignal | undefined, key: string): Promise<unknown> =>
  new Promise((resolve) => {
    signal?.addEventListener(
      'abort',
      () => {
        abortCodes.set(key, [...(abortCodes.get(key) ?? []), codeOf(signal.reason)]);
        resolve(signal.reason);
      },
      { once: true },
    );
  });

class Backoff extends Node<S> {
  constructor() {
    super({ name: 'backoff', maxRetries: 2, wait: 60 });
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): string {
    bump(execs, token);
    if (this.currentRetry === 0) throw new Error('first try fails');
    return 'second try';
  }
}

/** Ignores its signal; finishes when the test resolves the token's gate. */
class Stubborn extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<string> {
    bump(execs, token);
    void onAbort(this.signal, token);
    await gates.get(token)!.promise;
    return 'finished anyway';
  }
}

/** Honours its signal: hangs until it aborts, then throws the reason. */
class Obedient extends Node<S> {
  override prep(shared: S): string {
    return `${shared.token as string}`;
  }
  override async exec(token: string): Promise<never> {
    bump(execs, token);
    throw await onAbort(this.signal, token);
  }
}

class After extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override post(shared: S, token: string): void {
    bump(afters, token);
    shared.after = true;
  }
}

class Fan extends ParallelBatchFlow<S> {
  override prep(): object[] {
    return [{ i: 0 }, { i: 1 }, { i: 2 }];
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
  const batch = new Fan(new Obedient({ name: 'child' }), { name: 'fan' });
  batch.next(new After({ name: 'after' }));
  return new Flow(batch);
});
const done = defineFlow('cancel-done', () => new Flow(new Done({ name: 'done' })));
const flows = [backoff, stubborn, obedient, fan, done];

describe('LocalEngine: cancellation', () => {
  let engine: LocalEngine | undefined;
  afterEach(async () => {
    for (const gate of gates.values()) gate.resolve();
    await engine?.close();
    engine = undefined;
  });
  const open = (options: { concurrency?: number } = {}): { engine: LocalEngine; clock: FakeClock } => {
    const clock = new FakeClock();
    engine = new LocalEngine({ flows, clock, ...options });
    return { engine, clock };
  };

  it('cancels a run parked in a retry backoff at once, without another try', async () => {
    const { engine, clock } = open();
    const handle = await engine.start(backoff, { token: 'backoff' });
    await until('the retry delay', () => clock.pending().length === 1);

    await engine.cancel(handle.id);
    expect(await engine.get(handle.id)).toMatchObject({ status: 'cancelled' });
    const result = await handle.result();
    expect(result.status).toBe('cancelled');
    clock.advance(60_000); // the retry's time comes: nothing runs
    await flushMacrotask();
    expect(clock.pending()).toEqual([]);
    expect(execs.get('backoff')).toBe(1);
    expect((await engine.get(handle.id))?.status).toBe('cancelled');
  });

  it("stops a run whose exec is in flight at the end of the step, and aborts the exec's this.signal", async () => {
    const { engine } = open();
    const token = 'stubborn';
    gates.set(token, deferred());
    const handle = await engine.start(stubborn, { token });
    await until('exec to start', () => execs.get(token) === 1);

    await engine.cancel(handle.id);
    await until("exec's signal to abort", () => abortCodes.get(token)?.length === 1);
    expect(abortCodes.get(token)).toEqual(['RUN_CANCELLED']);
    gates.get(token)!.resolve();

    const result = await handle.result();
    expect(result.status).toBe('cancelled');
    expect(afters.get(token)).toBeUndefined();
    expect((await engine.get(handle.id))?.status).toBe('cancelled');
  });

  it('cancels promptly when the exec in flight honours this.signal', async () => {
    const { engine } = open();
    const handle = await engine.start(obedient, { token: 'obedient' });
    await until('exec to start', () => execs.get('obedient') === 1);
    await engine.cancel(handle.id);
    expect((await handle.result()).status).toBe('cancelled');
    expect(abortCodes.get('obedient')).toEqual(['RUN_CANCELLED']);
    expect(afters.get('obedient')).toBeUndefined();
  });

  it('cancels a queued run at once; its step never runs', async () => {
    const { engine } = open({ concurrency: 1 });
    const blocker = 'blocker';
    gates.set(blocker, deferred());
    const busy = await engine.start(stubborn, { token: blocker });
    await until('the only slot to be taken', () => execs.get(blocker) === 1);
    const queued = await engine.start(obedient, { token: 'queued' });
    expect((await engine.get(queued.id))?.status).toBe('queued');

    await engine.cancel(queued.id);
    expect((await queued.result()).status).toBe('cancelled');
    gates.get(blocker)!.resolve();
    expect((await busy.result()).status).toBe('completed');
    expect(execs.get('queued')).toBeUndefined();
  });

  it('cancels the children of a cancelled ParallelBatchFlow parent', async () => {
    const { engine } = open();
    const token = 'fan';
    const handle = await engine.start(fan, { token });
    await until('the three children to be in exec', () => execs.get(token) === 3);
    expect(await engine.get(handle.id)).toMatchObject({ status: 'waiting', children: { total: 3, ended: 0 } });
    const children = (await engine.list()).filter((info) => info.parentId === handle.id);
    expect(children).toHaveLength(3);

    await engine.cancel(handle.id);
    expect((await handle.result()).status).toBe('cancelled');
    for (const child of children) {
      await until(`child ${child.id} to be cancelled`, async () => (await engine.get(child.id))?.status === 'cancelled');
    }
    expect(abortCodes.get(token)).toEqual(['RUN_CANCELLED', 'RUN_CANCELLED', 'RUN_CANCELLED']);
    expect(afters.get(token)).toBeUndefined();
  });

  it('throws RUN_NOT_FOUND for an unknown run id', async () => {
    const { engine } = open();
    await expect(engine.cancel('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
  });

  it('leaves a finished run as it is', async () => {
    const { engine } = open();
    const result = await engine.run(done, {});
    const before = await engine.get(result.id);
    await engine.cancel(result.id);
    expect(await engine.get(result.id)).toEqual(before);
    expect(before?.status).toBe('completed');
  });
});
