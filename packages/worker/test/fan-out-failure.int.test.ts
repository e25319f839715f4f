/**
 * Fan-out failure policy on LocalEngine and RedisEngine (issue 4, item 4; DESIGN "Fan-out",
 * rule S10):
 * - `'fail-fast'` (default): the first child that fails after its retries fails the parent, once,
 *   with a CHILD_FAILED error naming the child; pending siblings never run; a sibling still
 *   running when the parent failed cannot restart it or write into its `shared`.
 * - `'collect'`: the parent goes on (failed children free their slot under a concurrency limit)
 *   and `post` receives one ItemOutcome per item, in item order:
 *   `{ ok: true, value }` (a ParallelBatchFlow child's value is its last action) or
 *   `{ ok: false, error: { name, message, code } }` (`NODE_FAILED` for an error thrown without a code).
 *
 * Children are told apart by `params.key` (ParallelBatchFlow) or the item (ParallelBatchNode):
 * `late` waits for the test to open a gate (and ignores its abort signal), `broken…` fails every
 * try, `quota` throws an error with a code, any other key succeeds.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import {
  defineFlow,
  Flow,
  LocalEngine,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type Engine,
  type ItemOutcome,
  type JsonObject,
  type RunInfo,
} from '@queueflow/runtime';
import { waitFor, within } from '../../../tests/support/wait-for.js';
import { aborted, gate, Tally, type Gate } from '../../../tests/support/node-probes.js';
import { useRedisHarness } from '../../../tests/support/redis-harness.js';

type S = Record<string, any>;

/** Tries of `exec`, as `<key>#<try>`, by the run's token. */
const tries = new Tally<string>();
/** Keys whose `exec` returned, by token. */
const returned = new Tally<string>();
const posts = new Tally<number>();
const afters = new Tally<number>();
const gates = new Map<string, Gate>();

class QuotaError extends Error {
  readonly code = 'QUOTA';
  constructor(message: string) {
    super(message);
    this.name = 'QuotaError';
  }
}

async function work(token: string, key: string, attempt: number): Promise<string> {
  tries.add(token, `${key}#${attempt}`);
  if (key === 'late') await gates.get(token)!.promise;
  if (key.startsWith('broken')) throw new Error(`${key} fails try ${attempt}`);
  if (key === 'quota') throw new QuotaError(`quota exceeded for ${key}`);
  returned.add(token, key);
  return key;
}

/** A ParallelBatchFlow child: two tries; its last action is `ok-<key>`. */
class Sibling extends Node<S> {
  constructor() {
    super({ name: 'sibling', maxRetries: 2 });
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): Promise<string> {
    return work(token, this.params.key as string, this.currentRetry);
  }
  override post(shared: S, _token: string, key: string): string {
    (shared.done ??= {})[key] = true;
    return `ok-${key}`;
  }
}

class Fan extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return (shared.keys as string[]).map((key) => ({ key }));
  }
  override post(shared: S, _list: unknown, outcomes: ItemOutcome[] | undefined): string {
    posts.add(shared.token as string, 1);
    if (outcomes) shared.outcomes = outcomes;
    return 'fanned-in';
  }
}

class Items extends ParallelBatchNode<S> {
  override prep(shared: S): string[] {
    return (shared.keys as string[]).map((key) => `${shared.token as string}/${key}`);
  }
  override exec(item: string): Promise<string> {
    const [token, key] = item.split('/') as [string, string];
    return work(token, key, this.currentRetry);
  }
  override post(shared: S, _items: unknown, results: unknown[]): string {
    posts.add(shared.token as string, 1);
    shared.results = results;
    return 'fanned-in';
  }
}

class After extends Node<S> {
  override post(shared: S): void {
    afters.add(shared.token as string, 1);
    shared.after = true;
  }
}

/** `first`, then `after` on the fan-in's action. */
function then(first: Node<S> | Fan): Flow<S> {
  first.on('fanned-in', new After({ name: 'after' }));
  return new Flow(first);
}

const flowFailFast = defineFlow('policy-flow-fail-fast', () =>
  then(new Fan(new Sibling(), { name: 'fan', concurrency: 2 })),
);
/**
 * Nested fan-outs: each `fan` child fans out again (`inner`). The grandchildren of child `nest`
 * wait until they are aborted (and record why) or released by the test; the one grandchild of
 * child `broken` fails every try, once all three of `nest`'s grandchildren are running.
 */
const abortCodes = new Tally<string | undefined>();
const nestRunning = new Map<string, Gate>();
class Inner extends ParallelBatchFlow<S> {
  override prep(): JsonObject[] {
    return this.params.key === 'nest' ? [{ g: 0 }, { g: 1 }, { g: 2 }] : [{ g: 0 }];
  }
}
class Grandchild extends Node<S> {
  constructor() {
    super({ name: 'grandchild', maxRetries: 2 });
  }
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<string> {
    tries.add(token, `${this.params.key as string}/${this.params.g as number}#${this.currentRetry}`);
    if (this.params.key === 'broken') {
      await nestRunning.get(token)!.promise;
      throw new Error(`grandchild of broken fails try ${this.currentRetry}`);
    }
    if (tries.of(token).filter((t) => t.startsWith('nest/')).length === 3) nestRunning.get(token)!.open();
    const released = gates.get(token)!.promise.then(() => new Error('released by the test'));
    const reason = await Promise.race([aborted(this.signal), released]);
    if (!(reason instanceof Error && reason.message === 'released by the test'))
      abortCodes.add(token, (reason as { code?: string } | undefined)?.code);
    throw reason;
  }
}
const nestedFailFast = defineFlow('policy-nested-fail-fast', () =>
  then(new Fan(new Inner(new Grandchild(), { name: 'inner' }), { name: 'fan' })),
);
/** A collecting ParallelBatchFlow whose children each run a (fail-fast) ParallelBatchNode. */
class ChildItems extends ParallelBatchNode<S> {
  constructor() {
    super({ name: 'child-items', maxRetries: 2 });
  }
  override prep(shared: S): string[] {
    // Two items: the child's key (a `broken…` key fails) and `ok-<key>`, which never fails.
    const [token, key] = [shared.token as string, this.params.key as string];
    return [`${token}/${key}`, `${token}/ok-${key}`];
  }
  override exec(item: string): Promise<string> {
    const [token, key] = item.split('/') as [string, string];
    return work(token, key, this.currentRetry);
  }
  override post(shared: S, _items: unknown, results: string[]): string {
    (shared.done ??= {})[this.params.key as string] = results;
    return `items-of-${this.params.key as string}`;
  }
}
const nestedCollect = defineFlow('policy-nested-collect', () =>
  then(new Fan(new ChildItems(), { name: 'fan', onItemError: 'collect' })),
);
const flowFailFastAll = defineFlow('policy-flow-fail-fast-all', () => then(new Fan(new Sibling(), { name: 'fan' })));
const flowCollect = defineFlow('policy-flow-collect', () =>
  then(new Fan(new Sibling(), { name: 'fan', onItemError: 'collect', concurrency: 2 })),
);
const itemsFailFast = defineFlow('policy-items-fail-fast', () =>
  then(new Items({ name: 'items', maxRetries: 2, concurrency: 2 })),
);
const itemsCollect = defineFlow('policy-items-collect', () =>
  then(new Items({ name: 'items', maxRetries: 2, onItemError: 'collect', concurrency: 2 })),
);
const flows = [flowFailFast, flowFailFastAll, nestedFailFast, nestedCollect, flowCollect, itemsFailFast, itemsCollect];

interface Subject {
  engine: Engine;
  /** Resolves once every step in flight has finished (and committed, or been refused). */
  settle(): Promise<void>;
  /** `ended` events published for `runId` so far (RedisEngine only). */
  endedEvents?(runId: string): number;
  /** Ids of a fan-out's child runs (RedisEngine: `<parent>.<step>.<index>`). */
  childIds?(parent: RunInfo, total: number): string[];
}

const setup = useRedisHarness();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const subjects: [string, () => Promise<Subject>][] = [
  [
    'LocalEngine',
    async () => {
      const engine = new LocalEngine({ flows });
      closers.push(() => engine.close());
      // Once node code has returned, the engine applies its outcome before the next macrotask.
      return { engine, settle: () => new Promise((resolve) => setImmediate(resolve)) };
    },
  ],
  [
    'RedisEngine (2 workers)',
    async () => {
      const harness = await setup('fan-out-policy', { flows, workers: 0 });
      const workers = [await harness.worker({ concurrency: 4 }), await harness.worker({ concurrency: 4 })];
      const events = await subscribe(harness.connection, harness.keys.events());
      closers.push(events.close);
      return {
        engine: harness.engine,
        settle: async () => void (await Promise.all(workers.map((w) => w.close()))),
        endedEvents: events.endedCount,
        childIds: (parent, total) => Array.from({ length: total }, (_, i) => `${parent.id}.${parent.steps}.${i}`),
      };
    },
  ],
];

async function subscribe(
  redis: Redis | Cluster,
  channel: string,
): Promise<{ endedCount(runId: string): number; close(): Promise<void> }> {
  const subscriber = redis.duplicate();
  const ended = new Tally<string>();
  subscriber.on('message', (_channel: string, message: string) => {
    const event = JSON.parse(message) as { type?: string; runId?: string; status?: string };
    if (event.type === 'ended' && event.runId) ended.add(event.runId, event.status ?? '');
  });
  await subscriber.subscribe(channel);
  return { endedCount: (runId) => ended.count(runId), close: async () => void subscriber.disconnect() };
}

const FAIL_FAST_KEYS = ['late', 'broken', 'p2', 'p3', 'p4', 'p5'];
const COLLECT_KEYS = ['k0', 'broken', 'quota', 'k3'];

describe.each(subjects)('fan-out failure policy on %s', (_name, open) => {
  it.each([
    ['ParallelBatchFlow', flowFailFast, 'fan'],
    ['ParallelBatchNode', itemsFailFast, 'items'],
  ] as const)(
    '%s fail-fast: the failed child fails the parent once; pending siblings never run; a late sibling changes nothing',
    async (kind, flow, owner) => {
      const subject = await open();
      const token = `${kind}-fail-fast-${Math.random()}`;
      gates.set(token, gate());
      const handle = await subject.engine.start<S>(flow, { token, keys: FAIL_FAST_KEYS });

      const result = await handle.result();
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({
        code: 'CHILD_FAILED',
        node: kind === 'ParallelBatchFlow' ? 'sibling' : 'items',
        attempts: 2,
      });
      expect(result.error?.message).toMatch(new RegExp(`child 1 of '${owner}' failed: broken fails try 1`));
      // The concurrency limit (2) let `late` and `broken` start; `broken` used both its tries.
      expect(tries.of(token).sort()).toEqual(['broken#0', 'broken#1', 'late#0']);
      const failed = await subject.engine.get(handle.id);
      expect(failed?.status).toBe('failed');

      // The parent's end is published before the cascade of cancels that follows it reaches the
      // running sibling (fan-out-driver: `parent-ended`); on a loaded machine, a sibling let go at
      // once could complete first. So the cascade is awaited before the late sibling goes on.
      if (subject.childIds && kind === 'ParallelBatchFlow') {
        const late = subject.childIds(failed!, FAIL_FAST_KEYS.length)[0]!;
        await waitFor('the cascade to cancel the running sibling', async () => {
          return (await subject.engine.get(late))?.status === 'cancelled';
        });
      }
      // The late sibling ends now: its result is refused.
      gates.get(token)!.open();
      await waitFor('the late sibling to return', () => returned.of(token).includes('late'));
      await subject.settle();

      expect(await subject.engine.get(handle.id)).toEqual(failed);
      expect(failed?.shared).toEqual({ token, keys: FAIL_FAST_KEYS }); // nothing merged into shared
      expect(tries.of(token).sort()).toEqual(['broken#0', 'broken#1', 'late#0']); // pending siblings never ran
      expect(posts.count(token)).toBe(0);
      expect(afters.count(token)).toBe(0);
      if (subject.endedEvents) expect(subject.endedEvents(handle.id)).toBe(1);
      if (subject.childIds && kind === 'ParallelBatchFlow') {
        const children = await Promise.all(
          subject.childIds(failed!, FAIL_FAST_KEYS.length).map((id) => subject.engine.get(id)),
        );
        // The running sibling is cancelled; the pending ones never started, so they never had a
        // record (child runs are made as they start, a window at a time).
        expect(children.map((c) => c?.status)).toEqual([
          'cancelled',
          'failed',
          undefined,
          undefined,
          undefined,
          undefined,
        ]);
      }
    },
  );

  it('fail-fast with every child failing at about the same time: the parent fails exactly once, naming one child', async () => {
    const subject = await open();
    const token = `all-fail-${Math.random()}`;
    const keys = Array.from({ length: 6 }, (_, i) => `broken${i}`);
    const handle = await subject.engine.start<S>(flowFailFastAll, { token, keys });

    const result = await handle.result();
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('CHILD_FAILED');
    expect(result.error?.message).toMatch(/^child (\d) of 'fan' failed: broken\1 fails try 1$/);
    const failed = await subject.engine.get(handle.id);
    await subject.settle();

    expect(await subject.engine.get(handle.id)).toEqual(failed);
    if (subject.endedEvents) expect(subject.endedEvents(handle.id)).toBe(1);
    expect(posts.count(token)).toBe(0);
    expect(afters.count(token)).toBe(0);
  });

  it('fail-fast in nested fan-outs: a failed grandchild fails its parent, which fails the root; the waiting sibling and its children are cancelled', async () => {
    const subject = await open();
    const token = `nested-${Math.random()}`;
    gates.set(token, gate());
    nestRunning.set(token, gate());
    try {
      const handle = await subject.engine.start<S>(nestedFailFast, { token, keys: ['nest', 'broken'] });

      // A child that fails inside a script (its own child failed fast) still reports to the root.
      const result = await within(handle.result(), 30_000, 'the root still waits after its child failed');
      expect(result.status).toBe('failed');
      expect(result.error?.code).toBe('CHILD_FAILED');
      expect(result.error?.message).toMatch(/^child 1 of 'fan' failed: /);
      expect(result.error?.message).toMatch(/grandchild of broken fails try 1/);
      // The grandchildren of the waiting sibling are told to stop.
      await waitFor("the waiting sibling's children to be aborted", () => abortCodes.count(token) === 3, {
        timeoutMs: 60_000,
      });
      expect(abortCodes.of(token)).toEqual(['RUN_CANCELLED', 'RUN_CANCELLED', 'RUN_CANCELLED']);
      const failed = await subject.engine.get(handle.id);
      await subject.settle();

      expect(await subject.engine.get(handle.id)).toEqual(failed);
      if (subject.endedEvents) expect(subject.endedEvents(handle.id)).toBe(1);
      if (subject.childIds) {
        const [nest, broken] = await Promise.all(subject.childIds(failed!, 2).map((id) => subject.engine.get(id)));
        expect(nest?.status).toBe('cancelled');
        expect(broken?.status).toBe('failed');
        const grandchildren = await Promise.all(subject.childIds(nest!, 3).map((id) => subject.engine.get(id)));
        expect(grandchildren.map((g) => g?.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
      }
      expect(posts.count(token)).toBe(0);
      expect(afters.count(token)).toBe(0);
    } finally {
      // Lets hanging grandchildren end, should the test fail.
      nestRunning.get(token)!.open();
      gates.get(token)!.open();
    }
  });

  it("collect over children that fail fast in their own ParallelBatchNode: the root goes on with { ok: false, error } (the child's run error) for them", async () => {
    const { engine } = await open();
    const token = `nested-collect-${Math.random()}`;
    const result = await within(
      engine.run<S>(nestedCollect, { token, keys: ['k0', 'broken', 'k2'] }),
      30_000,
      'the root still waits after its child failed',
    );

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.outcomes).toEqual([
      { ok: true, value: 'items-of-k0' },
      {
        ok: false,
        // The child run's own error: it failed because its item `broken` did.
        error: {
          name: 'QueueflowError',
          code: 'CHILD_FAILED',
          message: "child 0 of 'child-items' failed: broken fails try 1",
        },
      },
      { ok: true, value: 'items-of-k2' },
    ]);
    expect(result.shared.done).toEqual({ k0: ['k0', 'ok-k0'], k2: ['k2', 'ok-k2'] });
    expect(result.shared.after).toBe(true);
  });

  it("ParallelBatchFlow collect: post receives one outcome per child in order (value = the child's last action); the parent goes on", async () => {
    const { engine } = await open();
    const token = `flow-collect-${Math.random()}`;
    const result = await engine.run<S>(flowCollect, { token, keys: COLLECT_KEYS });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.outcomes).toEqual([
      { ok: true, value: 'ok-k0' },
      { ok: false, error: { name: 'Error', message: 'broken fails try 1', code: 'NODE_FAILED' } },
      { ok: false, error: { name: 'QuotaError', message: 'quota exceeded for quota', code: 'QUOTA' } },
      { ok: true, value: 'ok-k3' },
    ]);
    expect(result.shared.done).toEqual({ k0: true, k3: true }); // the failed children wrote nothing
    expect(result.shared.after).toBe(true);
    expect(posts.count(token)).toBe(1);
    expect(afters.count(token)).toBe(1);
  });

  it("ParallelBatchNode collect: post receives one outcome per item in order (value = exec's result); the parent goes on", async () => {
    const { engine } = await open();
    const token = `items-collect-${Math.random()}`;
    const result = await engine.run<S>(itemsCollect, { token, keys: COLLECT_KEYS });

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.results).toEqual([
      { ok: true, value: 'k0' },
      { ok: false, error: { name: 'Error', message: 'broken fails try 1', code: 'NODE_FAILED' } },
      { ok: false, error: { name: 'QuotaError', message: 'quota exceeded for quota', code: 'QUOTA' } },
      { ok: true, value: 'k3' },
    ]);
    expect(result.shared.after).toBe(true);
    expect(posts.count(token)).toBe(1);
    // `broken` used both tries; `quota`'s error is retryable too.
    expect(
      tries
        .of(token)
        .filter((t) => !t.startsWith('k'))
        .sort(),
    ).toEqual(['broken#0', 'broken#1', 'quota#0', 'quota#1']);
  });
});
