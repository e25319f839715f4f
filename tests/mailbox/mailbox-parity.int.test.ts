/**
 * The mailbox contract (DESIGN "Mailboxes", issue 5), one scenario at a time on `flow.run`
 * (process-wide in-memory mailboxes), LocalEngine and RedisEngine with a `queueflow worker`
 * process: the same messages arrive in the same order on all three. And on a 3-master Redis
 * Cluster with a store of 16 partitions (issue 18), where most messages cross partitions: their
 * sends, parks, wakes and reservations are hand-offs between a run's partition and its mailbox's.
 */
import { fileURLToPath } from 'node:url';
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES, setWarningHandler, type Json } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisClusterUrls, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { engineHarness, flowRunHarness, localHarness, type Harness } from './harness.js';
import {
  answer,
  ask,
  askInExec,
  collect,
  fanIn,
  mailboxFlows,
  produce,
  refuse,
  select,
  twoReceives,
  waitOnce,
  type AnswerShared,
  type FanInShared,
  type TwoReceivesShared,
  type AskShared,
  type CollectShared,
  type SelectShared,
  type WaitOnceShared,
} from './mailbox-flows.js';

const FLOWS = fileURLToPath(new URL('./mailbox-flows.ts', import.meta.url));

const bodies = (shared: CollectShared): Json[] => shared.got.map((m) => m.body);

const prefix = testPrefix('mbox-parity');
const clusterPrefix = testPrefix('mbox-parity-partitions');
const PARTITIONS = 16;
let worker: WorkerProcess | undefined;
let clusterWorker: WorkerProcess | undefined;
const harnesses: Record<string, Harness> = {};

beforeAll(async () => {
  setWarningHandler(() => {});
  [worker, clusterWorker] = await Promise.all([
    spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4 }),
    spawnWorker({
      flows: FLOWS,
      redisUrl: redisUrl(),
      cluster: redisClusterUrls(),
      partitions: PARTITIONS,
      prefix: clusterPrefix,
      concurrency: 4,
    }),
  ]);
  harnesses['flow.run'] = flowRunHarness();
  harnesses['LocalEngine'] = localHarness(mailboxFlows);
  harnesses['RedisEngine'] = engineHarness(
    'RedisEngine',
    new RedisEngine({ connection: redisUrl(), flows: mailboxFlows, prefix }),
  );
  harnesses['RedisCluster'] = engineHarness(
    'RedisCluster',
    new RedisEngine({
      connection: { cluster: redisClusterUrls() },
      flows: mailboxFlows,
      prefix: clusterPrefix,
      partitions: PARTITIONS,
    }),
  );
}, 120_000);

afterAll(async () => {
  setWarningHandler(null);
  for (const harness of Object.values(harnesses)) await harness.close();
  await stopWorkers([worker, clusterWorker].filter((each) => each !== undefined));
  await deletePrefix(redisUrl(), prefix);
  await deletePrefix({ cluster: redisClusterUrls() }, clusterPrefix);
});

describe.each(['flow.run', 'LocalEngine', 'RedisEngine', 'RedisCluster'])('mailboxes on %s', (name) => {
  const h = (): Harness => harnesses[name]!;
  /** Addresses of this test only (flow.run's mailboxes are process-wide). */
  const address = (what: string): string => `${what}.${nanoid(8)}`;

  it('FIFO per address and durable: messages sent before any receiver waits are received later, in send order', async () => {
    const a = address('fifo');
    for (const n of [1, 2, 3]) await h().send(a, { from: 'outside', n });
    const producer = await h().start(
      produce,
      {},
      {
        address: a,
        bodies: [
          { from: 'run', n: 4 },
          { from: 'run', n: 5 },
        ],
      },
    );
    expect((await producer.result()).status).toBe('completed');

    const receiver = await h().start(collect, { got: [] } as CollectShared, { address: a, count: 5 });
    const result = await receiver.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(bodies(result.shared)).toEqual([
      { from: 'outside', n: 1 },
      { from: 'outside', n: 2 },
      { from: 'outside', n: 3 },
      { from: 'run', n: 4 },
      { from: 'run', n: 5 },
    ]);
    expect(new Set(result.shared.got.map((m) => m.id)).size).toBe(5);
  });

  it('a message body over MAX_MESSAGE_BYTES is refused from outside and from a node, naming its size and the limit', async () => {
    const a = address('big');
    const big = 'x'.repeat(MAX_MESSAGE_BYTES); // its JSON has two quotes more: 2 bytes over
    const tooLarge = `is ${MAX_MESSAGE_BYTES + 2} bytes, over the limit of ${MAX_MESSAGE_BYTES} bytes (MAX_MESSAGE_BYTES)`;
    await expect(h().send(a, big)).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      message: `message body sent to '${a}' ${tooLarge}`,
    });
    const producer = await (await h().start(produce, {}, { address: a, bodies: [big] })).result();
    expect(producer.status).toBe('failed');
    expect(producer.error?.message).toContain(`message body sent to '${a}' ${tooLarge}`);
    const receiver = await (await h().start(waitOnce, {} as WaitOnceShared, { address: a, timeoutMs: 200 })).result();
    expect(receiver.shared.got ?? null).toBeNull(); // nothing was sent (the engines store JSON: null)
  });

  it('a send wakes a parked receiver; a step receiving several messages parks between them and keeps their order', async () => {
    const one = address('one-per-step');
    const all = address('all-in-one-step');
    const perStep = await h().start(collect, { got: [] } as CollectShared, { address: one, count: 3 });
    const inOneStep = await h().start(collect, { got: [] } as CollectShared, {
      address: all,
      count: 3,
      perStep: false,
    });
    await h().parked(perStep);
    await h().parked(inOneStep);
    for (const n of [1, 2, 3]) {
      await h().send(one, { n });
      await h().send(all, { n });
    }
    for (const run of [perStep, inOneStep]) {
      const result = await run.result();
      expect(result.status, result.error?.message).toBe('completed');
      expect(bodies(result.shared)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    }
  });

  it('receiveAny takes the head of the first of its addresses that holds a message, in the order given; the others stay', async () => {
    const [a, b, c] = [address('any-a'), address('any-b'), address('any-c')];
    await h().send(b, 'b1');
    await h().send(c, 'c1');
    await h().send(b, 'b2');
    const selecting = await h().start(select, { got: [] } as SelectShared, { addresses: [a, b, c], count: 3 });
    const result = await selecting.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared.got.map((m) => [m.address, m.body])).toEqual([
      [b, 'b1'],
      [b, 'b2'],
      [c, 'c1'],
    ]);
  });

  it('receiveAny parks on every address; the first message to any of them wakes it, and a later one elsewhere stays', async () => {
    const [a, b] = [address('park-any-a'), address('park-any-b')];
    const selecting = await h().start(select, { got: [] } as SelectShared, { addresses: [a, b], count: 1 });
    await h().parked(selecting);
    await h().send(b, 'to b');
    const result = await selecting.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared.got.map((m) => [m.address, m.body])).toEqual([[b, 'to b']]);
    // The run no longer waits on `a`: a message there waits for the next receiver.
    await h().send(a, 'to a');
    const later = await (await h().start(collect, { got: [] } as CollectShared, { address: a, count: 1 })).result();
    expect(bodies(later.shared)).toEqual(['to a']);
  });

  it('receiveAny leaves no message stranded beside another run parked on one of its addresses', async () => {
    const [a, b] = [address('stranded-a'), address('stranded-b')];
    const both = await h().start(select, { got: [] } as SelectShared, { addresses: [a, b], count: 1 });
    await h().parked(both);
    const onB = await h().start(select, { got: [] } as SelectShared, { addresses: [b], count: 1 });
    await h().parked(onB);
    // The send to `a` wakes `both`; the one to `b` may take `both`'s wake at `b`, already used.
    await h().send(a, 'to a');
    await h().send(b, 'to b');
    const [first, second] = await Promise.all([both.result(), onB.result()]);
    expect(first.shared.got.map((m) => [m.address, m.body])).toEqual([[a, 'to a']]);
    expect(second.shared.got.map((m) => [m.address, m.body])).toEqual([[b, 'to b']]);
  });

  it("a step parked on its second receiveAny, run again, gets its first message again, not an earlier address's newer one", async () => {
    const [a, b] = [address('again-a'), address('again-b')];
    await h().send(b, 'b1');
    const selecting = await h().start(select, { got: [] } as SelectShared, {
      addresses: [a, b],
      count: 2,
      perStep: false,
    });
    await h().parked(selecting);
    await h().send(a, 'a1');
    const result = await selecting.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared.got.map((m) => [m.address, m.body])).toEqual([
      [b, 'b1'],
      [a, 'a1'],
    ]);
    const ids = result.shared.got.map((m) => m.id);
    expect(new Set(ids).size).toBe(2);
  });

  it('receiveAny resolves undefined after its timeout; messages sent later stay in their mailboxes', async () => {
    const [a, b] = [address('any-timeout-a'), address('any-timeout-b')];
    const selecting = await h().start(select, { got: [] } as SelectShared, {
      addresses: [a, b],
      count: 1,
      timeoutMs: 300,
    });
    const result = await selecting.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared).toMatchObject({ got: [], timedOut: true });
    await h().send(b, 'late');
    const later = await (await h().start(collect, { got: [] } as CollectShared, { address: b, count: 1 })).result();
    expect(bodies(later.shared)).toEqual(['late']);
  });

  it('a timeout wakes the parked run and receive resolves undefined; a later message waits for the next receiver', async () => {
    const a = address('timeout');
    const timingOut = await h().start(waitOnce, {} as WaitOnceShared, { address: a, timeoutMs: 300 });
    await h().parked(timingOut);
    const result = await timingOut.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared.got).toBeNull();

    await h().send(a, { late: true });
    const next = await (await h().start(waitOnce, {} as WaitOnceShared, { address: a, timeoutMs: 30_000 })).result();
    expect(next.shared.got?.body).toEqual({ late: true });
  });

  it('competing receivers on one address: each message goes to exactly one of them', async () => {
    const shared = address('shared');
    const receivers = await Promise.all(
      Array.from({ length: 5 }, () => h().start(waitOnce, {} as WaitOnceShared, { address: shared })),
    );
    for (const run of receivers) await h().parked(run);
    for (const n of [1, 2, 3, 4, 5]) await h().send(shared, { n });
    const results = await Promise.all(receivers.map((run) => run.result()));
    expect(results.map((r) => r.status)).toEqual(Array(5).fill('completed'));
    const got = results.map((r) => (r.shared.got?.body as { n: number }).n).sort();
    expect(got).toEqual([1, 2, 3, 4, 5]);
  });

  it('ask/reply between two runs: the questions wait until the answerer starts, answers come back in order', async () => {
    const desk = address('desk');
    const asker = await h().start(ask, { answers: [] } as AskShared, { address: desk, questions: ['a', 'b', 'c'] });
    await h().parked(asker);
    const answerer = await h().start(answer, { answered: 0 } as AnswerShared, { address: desk, count: 3 });
    const [asked, answered] = await Promise.all([asker.result(), answerer.result()]);
    expect(asked.status, asked.error?.message).toBe('completed');
    expect(answered.status, answered.error?.message).toBe('completed');
    expect(asked.shared.answers).toEqual([
      { a: 'A', n: 0 },
      { a: 'B', n: 1 },
      { a: 'C', n: 2 },
    ]);
    expect(answered.shared.answered).toBe(3);
  });

  it('engine.send answers an ask from outside any run (human in the loop)', async () => {
    const human = address('human');
    const asker = await h().start(ask, { answers: [] } as AskShared, { address: human, questions: ['may I deploy?'] });
    // The person's inbox: a run that takes the question (with its reply address) off the mailbox.
    const inbox = await (await h().start(waitOnce, {} as WaitOnceShared, { address: human })).result();
    const question = inbox.shared.got;
    expect(question?.body).toEqual({ q: 'may I deploy?' });
    expect(question?.replyTo).toEqual(expect.any(String));

    await h().send(question!.replyTo!, { a: 'yes, after lunch' });
    const asked = await asker.result();
    expect(asked.status, asked.error?.message).toBe('completed');
    expect(asked.shared.answers).toEqual([{ a: 'yes, after lunch' }]);
  });

  it('an ask nobody answers resolves undefined after its timeout; the question stays for a later receiver', async () => {
    const nobody = address('nobody');
    const asked = await (
      await h().start(ask, { answers: [] } as AskShared, { address: nobody, questions: ['anyone?'], timeoutMs: 300 })
    ).result();
    expect(asked.status, asked.error?.message).toBe('completed');
    expect(asked.shared.answers).toEqual([null]);
    const later = await (
      await h().start(waitOnce, {} as WaitOnceShared, { address: nobody, timeoutMs: 30_000 })
    ).result();
    expect(later.shared.got?.body).toEqual({ q: 'anyone?' });
  });
  it('the children of a ParallelBatchFlow each wait on their own mailbox; the parent resumes when all have their message', async () => {
    const base = address('child');
    const run = await h().start(fanIn, { got: {} } as FanInShared, { base });
    for (const i of [2, 0, 1]) await h().send(`${base}.${i}`, { for: i });
    const result = await run.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared.got).toEqual({ '0': { for: 0 }, '1': { for: 1 }, '2': { for: 2 } });
  });

  // On Redis the set of runs parked on an address is a key of its own; it once was
  // `<prefix>:mailbox:<a>:waiters`, the mailbox key of address `<a>:waiters` (WRONGTYPE both ways).
  it('a run parks on an address while a message waits at that address plus ":waiters"', async () => {
    const y = address('y');
    await h().send(`${y}:waiters`, { to: 'y:waiters' });
    const onY = await h().start(waitOnce, {} as WaitOnceShared, { address: y });
    await h().parked(onY);
    await h().send(y, { to: 'y' });
    const result = await onY.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared.got?.body).toEqual({ to: 'y' });
    const other = await (
      await h().start(waitOnce, {} as WaitOnceShared, { address: `${y}:waiters`, timeoutMs: 2000 })
    ).result();
    expect(other.shared.got?.body).toEqual({ to: 'y:waiters' });
  });

  it('a send to an address plus ":waiters" while a run is parked on the address', async () => {
    const x = address('x');
    const onX = await h().start(waitOnce, {} as WaitOnceShared, { address: x });
    await h().parked(onX);
    await h().send(`${x}:waiters`, { to: 'x:waiters' });
    await h().send(x, { to: 'x' });
    const result = await onX.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared.got?.body).toEqual({ to: 'x' });
    const other = await (
      await h().start(waitOnce, {} as WaitOnceShared, { address: `${x}:waiters`, timeoutMs: 2000 })
    ).result();
    expect(other.shared.got?.body).toEqual({ to: 'x:waiters' });
  });

  // A woken step runs again from its start: a receive that timed out in an earlier run of the
  // step must resolve `undefined` again, not take a message that came since (nor wait anew).
  it('a step whose first receive timed out before its second parked keeps that timeout: a late message for the first stays in its mailbox', async () => {
    const [first, second, log] = [address('first'), address('second'), address('log')];
    const run = await h().start(twoReceives, {} as TwoReceivesShared, { first, second, log, firstTimeoutMs: 200 });
    // The step says when its first receive timed out; on an engine that message leaves as the
    // step parks on its second receive.
    const logged = await (await h().start(waitOnce, {} as WaitOnceShared, { address: log })).result();
    expect(logged.shared.got?.body).toEqual({ timedOut: first });

    await h().send(first, { late: true });
    await h().send(second, { n: 2 });
    const result = await run.result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(result.shared).toEqual({ first: null, second: { n: 2 } });
    const late = await (await h().start(waitOnce, {} as WaitOnceShared, { address: first, timeoutMs: 2000 })).result();
    expect(late.shared.got?.body).toEqual({ late: true });
  });

  // Sends made after the step's receive parked (code that caught the park signal and went on)
  // must not leave: the step, woken, sends for real with the same ordinals.
  it('an ask from exec whose code catches the park (as fallback code does) still sends its report once, with the answer', async () => {
    const [desk, out] = [address('desk'), address('out')];
    const asker = await h().start(askInExec, {}, { address: desk, out });
    const answerer = await h().start(answer, { answered: 0 } as AnswerShared, { address: desk, count: 1 });
    const [asked, answered] = await Promise.all([asker.result(), answerer.result()]);
    expect(answered.status, answered.error?.message).toBe('completed');
    expect(asked.status, asked.error?.message).toBe('completed');
    expect(asked.shared).toEqual({ result: { a: 'STATUS?', n: 0 } });
    const reports = await (
      await h().start(collect, { got: [] } as CollectShared, { address: out, count: 2, timeoutMs: 1000 })
    ).result();
    expect(bodies(reports.shared)).toEqual([{ result: { a: 'STATUS?', n: 0 } }]);
  });
});

/**
 * At-least-once delivery on the engines: a received message counts as consumed only when its
 * step commits. `flow.run` has no commit (a receive takes the message), see the last test.
 */
describe.each(['LocalEngine', 'RedisEngine', 'RedisCluster'])('at-least-once delivery on %s', (name) => {
  const h = (): Harness => harnesses[name]!;
  const address = (what: string): string => `${what}.${nanoid(8)}`;

  it('a message whose receiving step does not commit goes back to the head of its mailbox, same id (at-least-once)', async () => {
    const a = address('refused');
    await h().send(a, { n: 1 });
    await h().send(a, { n: 2 });
    const refused = await (await h().start(refuse, {}, { address: a })).result();
    expect(refused.status).toBe('failed');
    const refusedId = /refused message (\S+)/.exec(refused.error?.message ?? '')?.[1];
    expect(refusedId, refused.error?.message).toBeDefined();

    const result = await (await h().start(collect, { got: [] } as CollectShared, { address: a, count: 2 })).result();
    expect(bodies(result.shared)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(result.shared.got[0]!.id).toBe(refusedId); // the same message, recognisable by its id
  });

  it('cancelling a run parked with a reserved message gives the message back, ahead of later ones', async () => {
    const a = address('cancelled');
    await h().send(a, { n: 1 });
    // Receives {n:1} (reserved), then parks waiting for a second message in the same step.
    const holder = await h().start(collect, { got: [] } as CollectShared, { address: a, count: 2, perStep: false });
    await h().parked(holder);
    await h().cancel(holder);
    expect((await holder.result()).status).toBe('cancelled');

    await h().send(a, { n: 2 });
    const result = await (await h().start(collect, { got: [] } as CollectShared, { address: a, count: 2 })).result();
    expect(result.status, result.error?.message).toBe('completed');
    expect(bodies(result.shared)).toEqual([{ n: 1 }, { n: 2 }]);
  });
});

describe('flow.run', () => {
  it('takes a message out of the mailbox when receive resolves: a run that fails after it does not give it back', async () => {
    const h = harnesses['flow.run']!;
    const a = `taken.${nanoid(8)}`;
    await h.send(a, { n: 1 });
    await h.send(a, { n: 2 });
    expect((await (await h.start(refuse, {}, { address: a })).result()).status).toBe('failed');
    const result = await (await h.start(collect, { got: [] } as CollectShared, { address: a, count: 1 })).result();
    expect(bodies(result.shared)).toEqual([{ n: 2 }]);
  });
});
