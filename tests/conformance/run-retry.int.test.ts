/**
 * Contract: `engine.retry` (DESIGN "Operating runs"; Temporal's reset, bull-board's retry). A
 * failed or cancelled run goes on under the same id from its last committed checkpoint: the step
 * that did not commit runs again, committed steps do not, the error history stays, `retries`
 * counts the retries. A fan-out parent runs again only the children that did not complete. A run
 * still going or completed is refused with RUN_NOT_RETRYABLE.
 *
 * Node code counts its calls per token (node-probes.ts); a module-level set of broken tokens
 * stands for a bug, fixed between the failure and the retry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, ParallelBatchNode } from '@queueflow/runtime';
import { aborted, gate, Tally, type Gate } from '../support/node-probes.js';
import { waitFor, within } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

/** exec calls per token: the node's name, or `child <i>` for fan-out children and items. */
const execs = new Tally<string>();
/** Tokens whose failing step or child still has its bug. */
const broken = new Set<string>();
const gates = new Map<string, Gate>();

function gateOf(key: string): Gate {
  let found = gates.get(key);
  if (!found) gates.set(key, (found = gate()));
  return found;
}

const calls = (token: string, what: string): number => execs.of(token).filter((name) => name === what).length;

/** Counts its exec; fails (once, no retries) while its token is broken when `buggy` is set. */
class Step extends Node<S> {
  constructor(
    name: string,
    private readonly buggy = false,
  ) {
    super({ name });
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): string {
    execs.add(token, this.name!);
    if (this.buggy && broken.has(token)) throw new Error(`bug in ${this.name!}`);
    return this.name!;
  }
  override post(shared: S, _prep: unknown, name: string): void {
    shared.visited = [...((shared.visited as string[] | undefined) ?? []), name];
  }
}

/**
 * On its token's first visit, holds until its signal aborts (a cancel) and throws the reason;
 * with `shared.linger`, only once the token's `<token>:release` gate opens (an exec slow to stop).
 */
class HoldOnce extends Node<S> {
  override prep(shared: S): { token: string; linger: boolean } {
    return { token: shared.token as string, linger: shared.linger === true };
  }
  override async exec({ token, linger }: { token: string; linger: boolean }): Promise<string> {
    execs.add(token, this.name!);
    if (calls(token, this.name!) === 1) {
      const reason = await aborted(this.signal);
      execs.add(token, 'aborted');
      if (linger) await gateOf(`${token}:release`).promise;
      throw reason;
    }
    return this.name!;
  }
  override post(shared: S, _prep: unknown, name: string): void {
    shared.visited = [...((shared.visited as string[] | undefined) ?? []), name];
  }
}

function chain(name: string, ...make: (() => Node<S>)[]) {
  return defineFlow(name, () => {
    const nodes = make.map((node) => node());
    nodes.reduce((a, b) => a.next(b));
    return new Flow(nodes[0]!);
  });
}

const five = chain(
  'retry-five',
  () => new Step('s1'),
  () => new Step('s2'),
  () => new Step('s3', true),
  () => new Step('s4'),
  () => new Step('s5'),
);
const held = chain(
  'retry-held',
  () => new Step('s1'),
  () => new HoldOnce({ name: 'hold' }),
  () => new Step('s3'),
);
const quick = chain('retry-quick', () => new Step('quick'));

/** Receives one message at `shared.address` (the step parks until it comes) and keeps its body. */
class Receive extends Node<S> {
  override async prep(shared: S): Promise<unknown> {
    execs.add(shared.token as string, 'receive');
    return (await this.receive(shared.address as string))?.body;
  }
  override post(shared: S, body: unknown): void {
    shared.got = body;
  }
}
const receive = defineFlow('retry-receive', () => new Flow(new Receive({ name: 'receive' })));

/**
 * A child's behaviour by index, for the token in `shared`: 0 and 1 complete at once; 2 waits for
 * its `<token>:fail` gate and then fails while the token is broken; 3 holds on its first visit
 * until aborted (ParallelBatchFlow, cancelled with its parent) or until its `<token>:3` gate opens
 * (ParallelBatchNode items, which no cancel aborts). Later visits complete at once.
 */
async function childExec(token: string, i: number, signal: AbortSignal | undefined, items: boolean): Promise<number> {
  execs.add(token, `child ${i}`);
  if (i === 2 && broken.has(token)) {
    await gateOf(`${token}:fail`).promise;
    throw new Error(`child ${i} has a bug`);
  }
  if (i === 3 && calls(token, 'child 3') === 1) {
    if (items) await gateOf(`${token}:3`).promise;
    else throw await aborted(signal);
  }
  return i * 10;
}

class Fan extends ParallelBatchFlow<S> {
  override prep(shared: S): object[] {
    return Array.from({ length: shared.children as number }, (_, i) => ({ i }));
  }
  override post(shared: S): void {
    shared.fannedIn = true;
  }
}
class Child extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): Promise<number> {
    return childExec(token, this.params.i as number, this.signal, false);
  }
  override post(shared: S, _prep: unknown, value: number): void {
    shared[`c${this.params.i as number}`] = value;
  }
}
const fan = defineFlow('retry-fan', () => new Flow(new Fan(new Child({ name: 'child' }), { name: 'fan' })));

class Items extends ParallelBatchNode<S> {
  override prep(shared: S): { token: string; i: number }[] {
    return Array.from({ length: shared.children as number }, (_, i) => ({ token: shared.token as string, i }));
  }
  override exec(item: { token: string; i: number }): Promise<number> {
    return childExec(item.token, item.i, undefined, true);
  }
  override post(shared: S, _prep: unknown, values: number[]): void {
    shared.values = values;
  }
}
const items = defineFlow('retry-items', () => new Flow(new Items({ name: 'items' })));

/** Two walks that hold until aborted on the first two visits (a cancelled parent). */
const cancelFan = defineFlow('retry-cancel-fan', () => {
  class Both extends ParallelBatchFlow<S> {
    override prep(): object[] {
      return [{ i: 0 }, { i: 1 }];
    }
  }
  class Holder extends Node<S> {
    override prep(shared: S): string {
      return shared.token as string;
    }
    override async exec(token: string): Promise<void> {
      execs.add(token, 'holder');
      if (calls(token, 'holder') <= 2) throw await aborted(this.signal);
    }
    override post(shared: S): void {
      shared[`held${this.params.i as number}`] = true;
    }
  }
  return new Flow(new Both(new Holder({ name: 'holder' }), { name: 'both' }));
});

const flows = [five, held, quick, fan, items, cancelFan, receive];

describe.each(engines)('%s: retry a failed or cancelled run', (name) => {
  const setup = useEngine(name);
  // Registered after the engine's own cleanup, so it runs first: no exec waits on a gate then.
  afterEach(() => {
    for (const open of gates.values()) open.open();
  });

  it('goes on from the step that failed, under the same id, without running the committed steps again', async () => {
    const { engine } = await setup('retry-five', { flows });
    const token = `five-${name}`;
    broken.add(token);
    const failed = await engine.run<S>(five, { token });
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatchObject({ node: 's3', message: 'bug in s3' });
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed', steps: 2 });
    expect(execs.of(token)).toEqual(['s1', 's2', 's3']);

    broken.delete(token); // the bug is fixed
    const handle = await engine.retry(failed.id);
    expect(handle.id).toBe(failed.id);
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.id).toBe(failed.id);
    expect(result.error).toBeUndefined();
    expect(result.shared.visited).toEqual(['s1', 's2', 's3', 's4', 's5']);
    expect(execs.of(token)).toEqual(['s1', 's2', 's3', 's3', 's4', 's5']); // s1, s2 ran once

    const info = await engine.get(failed.id);
    expect(info).toMatchObject({ status: 'completed', steps: 5, retries: 1 });
    expect(info?.error).toBeUndefined();
    expect(info?.errors.map((e) => [e.node, e.message])).toEqual([['s3', 'bug in s3']]); // kept
    expect((await engine.history(failed.id)).map((r) => [r.step, r.node])).toEqual([
      [0, 's1'],
      [1, 's2'],
      [2, 's3'],
      [3, 's4'],
      [4, 's5'],
    ]);
  });

  it('counts each retry, and keeps the errors of every failed one', async () => {
    const { engine } = await setup('retry-twice', { flows });
    const token = `twice-${name}`;
    broken.add(token);
    const failed = await engine.run<S>(five, { token });
    expect(failed.status).toBe('failed');

    const again = await (await engine.retry(failed.id)).result(); // still broken
    expect(again.status).toBe('failed');
    expect(await engine.get(failed.id)).toMatchObject({ status: 'failed', steps: 2, retries: 1 });

    broken.delete(token);
    const result = await (await engine.retry(failed.id)).result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    const info = await engine.get(failed.id);
    expect(info).toMatchObject({ steps: 5, retries: 2 });
    expect(info?.errors.map((e) => e.node)).toEqual(['s3', 's3']);
    expect(calls(token, 's1')).toBe(1);
    expect(calls(token, 's3')).toBe(3);
  });

  it('goes on with a cancelled run from the step that was cancelled', async () => {
    // One slot: once a quick run has completed after the cancel, the cancelled step's task is gone.
    const { engine } = await setup('retry-cancelled', { flows, concurrency: 1 });
    const token = `cancelled-${name}`;
    const handle = await engine.start<S>(held, { token });
    await waitFor('the hold step to run', () => calls(token, 'hold') === 1);
    await engine.cancel(handle.id);
    expect((await handle.result()).status).toBe('cancelled');
    expect((await engine.run(quick, { token: `quick-${name}` })).status).toBe('completed');

    const result = await (await engine.retry(handle.id)).result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.visited).toEqual(['s1', 'hold', 's3']);
    expect(execs.of(token)).toEqual(['s1', 'hold', 'aborted', 'hold', 's3']);
    expect(await engine.get(handle.id)).toMatchObject({ status: 'completed', steps: 3, retries: 1 });
  });

  it('retries a cancelled run whose cancelled step is still ending: that step neither fails the run nor holds it up', async () => {
    const { engine } = await setup('retry-cancel-race', { flows });
    const token = `race-${name}`;
    const handle = await engine.start<S>(held, { token, linger: true });
    await waitFor('the hold step to run', () => calls(token, 'hold') === 1);
    await engine.cancel(handle.id);
    expect((await handle.result()).status).toBe('cancelled');
    await waitFor("the hold step's exec to see the abort", () => calls(token, 'aborted') === 1);

    // The user retries while the cancelled exec is still winding down; then it ends (throwing its abort reason).
    const retried = await engine.retry(handle.id);
    gateOf(`${token}:release`).open();
    const result = await within(retried.result(), 10_000, 'the retried run did not end');
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.visited).toEqual(['s1', 'hold', 's3']);
    expect(calls(token, 's1')).toBe(1);
    expect(calls(token, 'hold')).toBe(2);
  });

  it('goes on with a run cancelled while parked on a mailbox: it parks again and a message completes it', async () => {
    const { engine, until } = await setup('retry-parked', { flows });
    const token = `parked-${name}`;
    const handle = await engine.start<S>(receive, { token, address: `inbox-${name}` });
    await until(handle.id, 'the run to park', (info) => info.status === 'waiting');
    await engine.cancel(handle.id);
    expect((await handle.result()).status).toBe('cancelled');

    await engine.retry(handle.id);
    await until(handle.id, 'the retried run to park again', (info) => info.status === 'waiting');
    await engine.send(`inbox-${name}`, 'hello');
    const result = await within(handle.result(), 10_000, 'the retried run did not take the message');
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.got).toBe('hello');
  });

  it('starts a run cancelled before it started, when retried', async () => {
    // No slot free: the run is cancelled while queued.
    const { engine } = await setup('retry-queued', { flows, concurrency: 1 });
    const blocker = `blocker-${name}`;
    const busy = await engine.start<S>(held, { token: blocker });
    await waitFor('the only slot to be taken', () => calls(blocker, 'hold') === 1);
    const token = `queued-${name}`;
    const queued = await engine.start<S>(five, { token });
    await engine.cancel(queued.id);
    expect((await queued.result()).status).toBe('cancelled');
    expect((await engine.get(queued.id))?.startedAt).toBeUndefined();
    await engine.cancel(busy.id); // frees the slot
    expect((await engine.run(quick, { token: `quick-queued-${name}` })).status).toBe('completed');

    expect(await engine.get(queued.id)).toMatchObject({ status: 'cancelled' });
    const result = await (await engine.retry(queued.id)).result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(execs.of(token)).toEqual(['s1', 's2', 's3', 's4', 's5']);
  });

  it('refuses a running run and a completed one with RUN_NOT_RETRYABLE, an unknown one with RUN_NOT_FOUND', async () => {
    const { engine } = await setup('retry-refused', { flows });
    const token = `refused-${name}`;
    const running = await engine.start<S>(held, { token });
    await waitFor('the hold step to run', () => calls(token, 'hold') === 1);
    await expect(engine.retry(running.id)).rejects.toMatchObject({ code: 'RUN_NOT_RETRYABLE' });
    expect(await engine.get(running.id)).toMatchObject({ status: 'running' });
    expect(await engine.get(running.id)).not.toHaveProperty('retries');

    const completed = await engine.run<S>(quick, { token });
    expect(completed.status).toBe('completed');
    await expect(engine.retry(completed.id)).rejects.toMatchObject({ code: 'RUN_NOT_RETRYABLE' });
    expect(await engine.get(completed.id)).toMatchObject({ status: 'completed', steps: 1 });

    await expect(engine.retry('no-such-run')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    await engine.cancel(running.id);
  });

  it('runs again only the children of a failed-fast ParallelBatchFlow that did not complete', async () => {
    const harness = await setup('retry-fan', { flows, concurrency: 4 });
    const { engine, until } = harness;
    const token = `fan-${name}`;
    broken.add(token);
    const handle = await engine.start<S>(fan, { token, children: 4 });
    await until(handle.id, 'children 0 and 1 to complete', (info) => info.children?.ended === 2);
    await waitFor('child 3 to be in exec', () => calls(token, 'child 3') === 1);
    gateOf(`${token}:fail`).open(); // child 2 fails: the parent fails fast, child 3 is cancelled
    const failed = await handle.result();
    expect(failed.status).toBe('failed');
    // The siblings are cancelled after the parent's end (the cascade follows the script that ended it).
    const statuses = await waitFor('child 3 to be cancelled', async () => {
      const found = (await engine.children(handle.id)).map((child) => child.status);
      return found[3] === 'running' ? undefined : found;
    });
    expect(statuses).toEqual(['completed', 'completed', 'failed', 'cancelled']);
    await harness.idle();

    broken.delete(token);
    const result = await (await engine.retry(handle.id)).result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toMatchObject({ c0: 0, c1: 10, c2: 20, c3: 30, fannedIn: true });
    expect([0, 1, 2, 3].map((i) => calls(token, `child ${i}`))).toEqual([1, 1, 2, 2]);
    expect(await engine.get(handle.id)).toMatchObject({ status: 'completed', retries: 1 });
  });

  it('runs again only the items of a failed-fast ParallelBatchNode that did not complete', async () => {
    const harness = await setup('retry-items', { flows, concurrency: 4 });
    const { engine, until } = harness;
    const token = `items-${name}`;
    broken.add(token);
    const handle = await engine.start<S>(items, { token, children: 4 });
    await until(handle.id, 'items 0 and 1 to complete', (info) => info.children?.ended === 2);
    await waitFor('item 3 to be in exec', () => calls(token, 'child 3') === 1);
    gateOf(`${token}:fail`).open(); // item 2 fails: the parent fails fast
    const failed = await handle.result();
    expect(failed.status).toBe('failed');
    gateOf(`${token}:3`).open(); // item 3 ends after its parent: its value counts for nothing
    await harness.idle();

    broken.delete(token);
    const result = await (await engine.retry(handle.id)).result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.values).toEqual([0, 10, 20, 30]);
    expect([0, 1, 2, 3].map((i) => calls(token, `child ${i}`))).toEqual([1, 1, 2, 2]);
  });

  it('completes a ParallelBatchFlow parent retried after it was cancelled while waiting on its children', async () => {
    const harness = await setup('retry-cancel-fan', { flows, concurrency: 4 });
    const { engine } = harness;
    const token = `cancel-fan-${name}`;
    const handle = await engine.start<S>(cancelFan, { token });
    await waitFor('both children to be in exec', () => calls(token, 'holder') === 2);
    await engine.cancel(handle.id);
    expect((await handle.result()).status).toBe('cancelled');
    await harness.idle();

    const result = await (await engine.retry(handle.id)).result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toMatchObject({ held0: true, held1: true });
    expect(calls(token, 'holder')).toBe(4); // both children ran again
    expect(await engine.get(handle.id)).toMatchObject({ status: 'completed', retries: 1 });
  });
});
