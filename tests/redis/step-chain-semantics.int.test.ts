/**
 * The semantics a job per step had, held by step continuation and direct hand-off (continueSteps,
 * CommitFields.takenBy; a newcomer's probes, kept as regression tests):
 * tries of a woken step run by hand-off, a taken wake of a run on a queue this worker does not
 * serve (the `not-here` path), and a graceful stop in the middle of a chain.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Message } from '@queueflow/runtime';
import { useRedisHarness, type RedisHarness } from '../support/redis-harness.js';
import { gate, Tally, type Gate } from '../support/node-probes.js';

type Box = { token: string; got?: unknown };

const tries = new Tally<number>();

/** Receives one message on `box-<token>`, then fails `exec` until try `succeedOn` (never without it). */
class FlakyReceiver extends Node<Box> {
  constructor(
    options: ConstructorParameters<typeof Node>[0],
    private readonly succeedOn?: number,
  ) {
    super(options);
  }
  override async prep(shared: Box): Promise<[string, Message | undefined]> {
    return [shared.token, await this.receive(`box-${shared.token}`)];
  }
  override exec([token, message]: [string, Message | undefined]): unknown {
    tries.add(token, this.currentRetry);
    if (this.succeedOn === undefined || this.currentRetry < this.succeedOn) throw new Error(`try ${this.currentRetry}`);
    return message?.body;
  }
  override post(shared: Box, _prep: unknown, body: unknown): undefined {
    shared.got = body;
    return undefined;
  }
}

/** Sends one message to `box-<token>`. */
class Sender extends Node<Box> {
  override async post(shared: Box): Promise<undefined> {
    await this.send(`box-${shared.token}`, { hello: shared.token });
    return undefined;
  }
}

const sending = defineFlow('review-sending', () => new Flow(new Sender({ name: 'send' })));
const failsAlways = defineFlow(
  'review-fails-always',
  () => new Flow(new FlakyReceiver({ name: 'receive', maxRetries: 3, wait: 0.01 })),
);
const thirdTry = defineFlow(
  'review-third-try',
  () => new Flow(new FlakyReceiver({ name: 'receive', maxRetries: 3, wait: 0.01 }, 2)),
);
/** The receiver on queue `side`: a worker of the default queue that takes its wake gives it back. */
const onSide = defineFlow('review-on-side', () => new Flow(new FlakyReceiver({ name: 'receive', queue: 'side' }, 0)));

const gates = new Map<string, { reached: Gate; go: Gate }>();
type Count = { n: number; until: number; token: string };
/** Counts to `until`, one step per count; at `n == 5` waits for the test. */
class Tick extends Node<Count> {
  override async exec(): Promise<void> {}
  override async post(shared: Count): Promise<string | undefined> {
    if (shared.n === 5) {
      const g = gates.get(shared.token);
      if (g) {
        g.reached.open();
        await g.go.promise;
      }
    }
    shared.n += 1;
    return shared.n < shared.until ? 'again' : undefined;
  }
}
const counting = defineFlow('review-counting', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

type Twice = { token: string; first?: unknown; second?: unknown; turn: number };
/** Receives on `box-<token>` (no timeout), then again with a 300 ms timeout: nobody sends twice. */
class ReceiveTwice extends Node<Twice> {
  override async prep(shared: Twice): Promise<Message | undefined> {
    return shared.turn === 0
      ? this.receive(`box-${shared.token}`)
      : this.receive(`box-${shared.token}`, { timeoutMs: 300 });
  }
  override post(shared: Twice, message: Message | undefined): string | undefined {
    if (shared.turn === 0) shared.first = message?.body ?? null;
    else shared.second = message?.body ?? null;
    shared.turn += 1;
    return shared.turn < 2 ? 'again' : undefined;
  }
}
const receivingTwice = defineFlow('review-receive-twice', () => {
  const node = new ReceiveTwice({ name: 'twice' });
  node.on('again', node);
  return new Flow(node);
});

const inFlight = new Map<string, { now: number; most: number; execs: number }>();
type Loop = { n: number; until: number; token: string };
/** A step of a loop whose `exec` holds budget `slot` (concurrency 1) across a few ticks. */
class Slotted extends Node<Loop> {
  override prep(shared: Loop): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    const seen = inFlight.get(token) ?? { now: 0, most: 0, execs: 0 };
    inFlight.set(token, seen);
    seen.now += 1;
    seen.execs += 1;
    seen.most = Math.max(seen.most, seen.now);
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    seen.now -= 1;
  }
  override post(shared: Loop): string | undefined {
    shared.n += 1;
    return shared.n < shared.until ? 'again' : undefined;
  }
}
const slottedLoop = defineFlow('review-slotted-loop', () => {
  const node = new Slotted({ name: 'slotted', limits: [{ key: 'slot', concurrency: 1 }] });
  node.on('again', node);
  return new Flow(node);
});

const hogGates = new Map<string, { reached: Gate; go: Gate }>();
/** Holds budget `slot` until the test opens its gate. */
class Hog extends Node<Box> {
  override prep(shared: Box): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    const g = hogGates.get(token)!;
    g.reached.open();
    await g.go.promise;
  }
}
const hogging = defineFlow(
  'review-hog',
  () => new Flow(new Hog({ name: 'hog', limits: [{ key: 'slot', concurrency: 1 }] })),
);
/** Receives on `box-<token>`, then needs budget `slot` for its exec. */
class SlottedReceiver extends Node<Box> {
  override async prep(shared: Box): Promise<Message | undefined> {
    return this.receive(`box-${shared.token}`);
  }
  override exec(message: Message | undefined): unknown {
    return message?.body;
  }
  override post(shared: Box, _prep: unknown, body: unknown): undefined {
    shared.got = body;
    return undefined;
  }
}
const slottedReceiving = defineFlow(
  'review-slotted-receiving',
  () => new Flow(new SlottedReceiver({ name: 'receive', limits: [{ key: 'slot', concurrency: 1 }] })),
);

/** A node that fails its first try (wait 0.2 s), then a plain node run continued after it. */
class FailsOnce extends Node<Box> {
  override exec(): string {
    if (this.currentRetry === 0) throw new Error('first try');
    return 'ok';
  }
}
const failsOnceThenOn = defineFlow('review-fails-once', () => {
  const first = new FailsOnce({ name: 'first', maxRetries: 2, wait: 0.2 });
  first.next(new Node({ name: 'second' }));
  return new Flow(first);
});

const receiveGates = new Map<string, { reached: Gate; go: Gate }>();
/** Receives on `box-<token>`; its exec waits for the test's gate when there is one. */
class GatedReceiver extends Node<Box> {
  override async prep(shared: Box): Promise<[string, Message | undefined]> {
    return [shared.token, await this.receive(`box-${shared.token}`)];
  }
  override async exec([token, message]: [string, Message | undefined]): Promise<unknown> {
    const g = receiveGates.get(token);
    if (g) {
      g.reached.open();
      await g.go.promise;
    }
    return message?.body;
  }
  override post(shared: Box, _prep: unknown, body: unknown): undefined {
    shared.got = body;
    return undefined;
  }
}
const gatedReceiving = defineFlow('review-gated-receiving', () => new Flow(new GatedReceiver({ name: 'receive' })));
type Pair = { first: string; second: string };
/** Sends to `box-<first>` in one step, then to `box-<second>` in the next. */
class SendTo extends Node<Pair> {
  constructor(private readonly which: 'first' | 'second') {
    super({ name: `send-${which}` });
  }
  override async post(shared: Pair): Promise<undefined> {
    await this.send(`box-${shared[this.which]}`, { to: shared[this.which] });
    return undefined;
  }
}
const sendingTwo = defineFlow('review-sending-two', () => {
  const first = new SendTo('first');
  first.next(new SendTo('second'));
  return new Flow(first);
});

const paced = new Tally<number>();
/** A loop whose exec takes one unit of budget `paced` (3 per second). */
class PacedTick extends Node<Loop> {
  override prep(shared: Loop): [string, number] {
    return [shared.token, shared.n];
  }
  override exec([token, n]: [string, number]): void {
    paced.add(token, n);
  }
  override post(shared: Loop): string | undefined {
    shared.n += 1;
    return shared.n < shared.until ? 'again' : undefined;
  }
}
const pacedLoop = defineFlow('review-paced-loop', () => {
  const node = new PacedTick({ name: 'paced', limits: [{ key: 'paced', rate: { max: 3, perMs: 1000 } }] });
  node.on('again', node);
  return new Flow(node);
});

/** Jobs workers took from the default step queue so far (BullMQ's `active` events). */
async function jobsActivated(redis: RedisHarness): Promise<number> {
  const entries = await redis.connection.xrange(`${redis.prefix}:${redis.keys.stepQueue}:events`, '-', '+');
  return entries.filter(([, fields]) => fields[fields.indexOf('event') + 1] === 'active').length;
}

const hung = new Tally<number>();
/** Receives on `box-<token>` when `receives`; its exec hangs until its signal aborts (its timeout). */
class Hangs extends Node<Box> {
  constructor(
    options: ConstructorParameters<typeof Node>[0],
    private readonly receives: boolean,
  ) {
    super(options);
  }
  override async prep(shared: Box): Promise<string> {
    if (this.receives) await this.receive(`box-${shared.token}`);
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    hung.add(token, this.currentRetry);
    const signal = this.signal;
    await new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
    throw signal?.reason ?? new Error('aborted');
  }
}
const hangsWhenWoken = defineFlow(
  'review-hangs-woken',
  () => new Flow(new Hangs({ name: 'hang', maxRetries: 2, timeoutMs: 100 }, true)),
);
const hangsContinued = defineFlow('review-hangs-continued', () => {
  const first = new Node({ name: 'first' });
  first.next(new Hangs({ name: 'hang', maxRetries: 2, timeoutMs: 100 }, false));
  return new Flow(first);
});

/** A loop whose every step takes a few ms of I/O. */
class SlowTick extends Node<Loop> {
  override async exec(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  override post(shared: Loop): string | undefined {
    shared.n += 1;
    return shared.n < shared.until ? 'again' : undefined;
  }
}
const slowLoop = defineFlow('review-slow-loop', () => {
  const node = new SlowTick({ name: 'slow' });
  node.on('again', node);
  return new Flow(node);
});

describe('review: hand-off and continuation', () => {
  const setup = useRedisHarness();
  const flows = [
    slowLoop,
    hangsWhenWoken,
    hangsContinued,
    pacedLoop,
    gatedReceiving,
    sendingTwo,
    failsOnceThenOn,
    sending,
    failsAlways,
    thirdTry,
    onSide,
    counting,
    receivingTwice,
    slottedLoop,
    hogging,
    slottedReceiving,
  ];

  it('a concurrency budget holds across continued steps of several runs on two workers', async () => {
    const redis = await setup('review-budget-chain', { flows, workers: 0 });
    await redis.worker({ concurrency: 2 });
    await redis.worker({ concurrency: 2 });
    const token = `budget-${redis.prefix}`;
    const runs = await Promise.all(
      Array.from({ length: 4 }, () => redis.engine.start(slottedLoop, { n: 0, until: 8, token })),
    );
    const results = await Promise.all(runs.map((run) => run.result()));
    expect(results.map((result) => result.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(inFlight.get(token)).toMatchObject({ most: 1, execs: 32 });
  });

  it.each([0, 50])(
    'a woken step waiting for budget runs once the budget frees (continueSteps %i)',
    async (continueSteps) => {
      const redis = await setup(`review-budget-taken-${continueSteps}`, { flows, workers: 0 });
      await redis.worker({ concurrency: 2, continueSteps });
      const token = `budget-taken-${redis.prefix}`;
      const g = { reached: gate(), go: gate() };
      hogGates.set(token, g);
      const hog = await redis.engine.start(hogging, { token });
      await g.reached.promise;
      const receiver = await redis.engine.start(slottedReceiving, { token });
      await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
      await redis.engine.run(sending, { token });
      await redis.until(receiver.id, 'the receiver to wait for budget', (info) => info.status === 'throttled');
      g.go.open();
      expect((await hog.result()).status).toBe('completed');
      // The hog gave its budget back (and promoted the waiter it let through) before it committed:
      // the receiver's task is due now, not left delayed until the recheck or the lease's expiry.
      const delayed = await redis.connection.zrange(`${redis.prefix}:${redis.keys.stepQueue}:delayed`, 0, -1);
      expect(delayed.filter((id) => id.startsWith(receiver.id))).toEqual([]);
      const result = await receiver.result();
      expect(result).toMatchObject({ status: 'completed', shared: { got: { hello: token } } });
    },
  );

  it("a step continued after a retried step records its own start, not the retried step's", async () => {
    const redis = await setup('review-started-at', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const result = await redis.engine.run(failsOnceThenOn, { token: 'x' });
    expect(result.status).toBe('completed');
    const [first, second] = await redis.engine.history(result.id);
    expect(first).toMatchObject({ node: 'first', tries: 2 });
    expect(second).toMatchObject({ node: 'second', tries: 1 });
    expect(second!.startedAt).toBeGreaterThanOrEqual(first!.endedAt);
  });

  it('a run cancelled while its taken wake runs is cancelled, its message back in the mailbox', async () => {
    const redis = await setup('review-cancel-taken', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const token = `cancel-taken-${redis.prefix}`;
    const g = { reached: gate(), go: gate() };
    receiveGates.set(token, g);
    const receiver = await redis.engine.start(gatedReceiving, { token });
    await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
    await redis.engine.run(sending, { token });
    await g.reached.promise;
    await redis.engine.cancel(receiver.id);
    g.go.open();
    expect((await receiver.result()).status).toBe('cancelled');
    receiveGates.delete(token);
    const again = await redis.engine.run(gatedReceiving, { token });
    expect(again).toMatchObject({ status: 'completed', shared: { got: { hello: token } } });
  });

  it('a worker closed while it runs one taken wake gives the next one back', async () => {
    const redis = await setup('review-close-taken', { flows, workers: 0 });
    const first = await redis.worker({ concurrency: 1 });
    const a = `close-a-${redis.prefix}`;
    const b = `close-b-${redis.prefix}`;
    const g = { reached: gate(), go: gate() };
    receiveGates.set(a, g);
    const runA = await redis.engine.start(gatedReceiving, { token: a });
    const runB = await redis.engine.start(gatedReceiving, { token: b });
    await redis.until(runA.id, 'A to park', (info) => info.status === 'waiting');
    await redis.until(runB.id, 'B to park', (info) => info.status === 'waiting');
    const sender = await redis.engine.start(sendingTwo, { first: a, second: b });
    await g.reached.promise;
    const closing = first.close();
    g.go.open();
    await closing;
    receiveGates.delete(a);
    expect((await sender.result()).status).toBe('completed');
    expect((await runA.result()).status).toBe('completed');
    await redis.worker({ concurrency: 1 });
    expect(await runB.result()).toMatchObject({ status: 'completed', shared: { got: { to: b } } });
    const keys = await redis.scanKeys();
    expect(keys.filter((key) => key.includes(':workers:taken:'))).toEqual([]);
  });

  it('a rate budget holds across continued steps without a busy loop', async () => {
    const redis = await setup('review-rate-chain', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const token = `rate-${redis.prefix}`;
    const result = await redis.engine.run(pacedLoop, { n: 0, until: 7, token });
    expect(result).toMatchObject({ status: 'completed', shared: { n: 7 } });
    expect(paced.of(token)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // 7 units at 3 a second: two waits for the window, each one job (or a few, never a spin).
    expect(await jobsActivated(redis)).toBeLessThanOrEqual(8);
  });

  it('a node timeout counts its tries on a continued step and on a woken step run by hand-off', async () => {
    const redis = await setup('review-node-timeout', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const continued = `timeout-continued-${redis.prefix}`;
    const chained = await redis.engine.run(hangsContinued, { token: continued });
    expect(chained.status).toBe('failed');
    expect(chained.error?.code).toBe('NODE_TIMEOUT');
    expect(hung.of(continued)).toEqual([0, 1]);

    const woken = `timeout-woken-${redis.prefix}`;
    const receiver = await redis.engine.start(hangsWhenWoken, { token: woken });
    await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
    await redis.engine.run(sending, { token: woken });
    const result = await receiver.result();
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('NODE_TIMEOUT');
    expect(hung.of(woken)).toEqual([0, 1]);
  });

  it('a long chain of a low-priority run lets a higher-priority run in', async () => {
    const redis = await setup('review-priority', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    // 400 steps of >= 10 ms: several one-second slices.
    const low = await redis.engine.start(slowLoop, { n: 0, until: 400, token: 'low' }, { priority: 10 });
    await redis.until(low.id, 'the low-priority run to begin its chain', (info) => (info.steps ?? 0) >= 3);
    const high = await redis.engine.start(slowLoop, { n: 0, until: 3, token: 'high' }, { priority: 1 });
    expect((await high.result()).status).toBe('completed');
    expect((await redis.engine.get(low.id))?.status).toBe('running');
    expect((await low.result()).status).toBe('completed');
  });

  it('a run whose wake was taken still times out on its next receive', async () => {
    const redis = await setup('review-taken-timeout', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const token = `timeout-${redis.prefix}`;
    const receiver = await redis.engine.start(receivingTwice, { token, turn: 0 });
    await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
    await redis.engine.run(sending, { token });
    const result = await receiver.result();
    expect(result).toMatchObject({ status: 'completed', shared: { first: { hello: token }, second: null } });
  });

  it('a run cancelled while a worker continues it stops at the step boundary', async () => {
    const redis = await setup('review-cancel-chain', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const token = `cancel-${redis.prefix}`;
    const g = { reached: gate(), go: gate() };
    gates.set(token, g);
    const run = await redis.engine.start(counting, { n: 0, until: 30, token });
    await g.reached.promise;
    await redis.engine.cancel(run.id);
    g.go.open();
    const result = await run.result();
    gates.delete(token);
    expect(result.status).toBe('cancelled');
    // Steps 0..4 committed before the cancel; step 5 was in flight and may not commit after it.
    const steps = (await redis.engine.history(run.id)).map((record) => record.step);
    expect(steps).toEqual([0, 1, 2, 3, 4]);
  });

  it('a woken step run by hand-off that always fails runs exec exactly maxRetries times', async () => {
    const redis = await setup('review-taken-fail', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const token = `fail-${redis.prefix}`;
    const receiver = await redis.engine.start(failsAlways, { token });
    await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
    const sender = await redis.engine.run(sending, { token });
    expect(sender.status).toBe('completed');
    const result = await receiver.result();
    expect(result.status).toBe('failed');
    expect(tries.of(token)).toEqual([0, 1, 2]);
    const info = await redis.engine.get(receiver.id);
    expect(info?.errors.map((error) => error.attempt)).toEqual([0, 1, 2]);
  });

  it('a woken step run by hand-off that succeeds on its third try completes with 3 tries', async () => {
    const redis = await setup('review-taken-third', { flows, workers: 0 });
    await redis.worker({ concurrency: 1 });
    const token = `third-${redis.prefix}`;
    const receiver = await redis.engine.start(thirdTry, { token });
    await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
    await redis.engine.run(sending, { token });
    const result = await receiver.result();
    expect(result).toMatchObject({ status: 'completed', shared: { got: { hello: token } } });
    expect(tries.of(token)).toEqual([0, 1, 2]);
    const history = await redis.engine.history(receiver.id);
    expect(history.map((record) => [record.node, record.tries])).toEqual([['receive', 3]]);
  });

  it('a taken wake of a run on a queue this worker does not serve runs on that queue, message once', async () => {
    const redis = await setup('review-not-here', { flows, workers: 0 });
    const main = await redis.worker({ concurrency: 1 });
    const side = await redis.worker({ concurrency: 1, queues: ['side'] });
    const token = `side-${redis.prefix}`;
    const receiver = await redis.engine.start(onSide, { token });
    await redis.until(receiver.id, 'the receiver to park', (info) => info.status === 'waiting');
    const sent = await redis.engine.run(sending, { token });
    const result = await receiver.result();
    expect(result).toMatchObject({ status: 'completed', shared: { got: { hello: token } } });
    expect(tries.of(token)).toEqual([0]);
    // The sender ran on the default queue's worker; the receiver's step on the side worker.
    const [mainId] = (await redis.engine.history(sent.id)).map((r) => r.worker);
    const [receivedOn] = (await redis.engine.history(receiver.id)).map((r) => r.worker);
    expect(receivedOn).toBeDefined();
    expect(receivedOn).not.toBe(mainId);
    await main.close();
    await side.close();
    const keys = await redis.scanKeys();
    expect(keys.filter((key) => key.includes(':workers:taken:'))).toEqual([]);
    expect(await redis.connection.zcard(`${redis.prefix}:${redis.keys.stepQueue}:delayed`)).toBe(0);
  });

  it('a worker closed in the middle of a chain leaves the run to the next worker, each step once', async () => {
    const redis = await setup('review-close-chain', { flows, workers: 0 });
    const first = await redis.worker({ concurrency: 1 });
    const token = `close-${redis.prefix}`;
    const g = { reached: gate(), go: gate() };
    gates.set(token, g);
    const run = await redis.engine.start(counting, { n: 0, until: 12, token });
    await g.reached.promise;
    const closing = first.close();
    g.go.open();
    await closing;
    gates.delete(token);
    expect((await redis.engine.get(run.id))?.status).not.toBe('completed');
    await redis.worker({ concurrency: 1 });
    const result = await run.result();
    expect(result).toMatchObject({ status: 'completed', shared: { n: 12 } });
    expect((await redis.engine.history(run.id)).map((record) => record.step)).toEqual(
      Array.from({ length: 12 }, (_, i) => i),
    );
  });
});
