/**
 * A worker runs a run's next step straight after the step a job brought, in the same job
 * (`WorkerOptions.continueSteps`; issue 17, item 5): a run's steps then cost no BullMQ job each.
 * The semantics stay those of a job per step: a continued step that fails a try gets a task of its
 * own that counts its tries on, a step that fails for good used exactly its `maxRetries`, and
 * `continueSteps: 0` gives every step a job. A step that wakes a parked run takes it and runs its
 * step in the same job (direct hand-off): its delayed wake is removed, nothing is left taken.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Message } from '@queueflow/runtime';
import { useRedisHarness, type RedisHarness } from '../support/redis-harness.js';
import { Tally } from '../support/node-probes.js';

type Count = { n: number; until: number; token: string };

/** Counts up to `until`, one step per count. */
class Tick extends Node<Count> {
  override post(shared: Count): string | undefined {
    shared.n += 1;
    return shared.n < shared.until ? 'again' : undefined;
  }
}
const counting = defineFlow('counting', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

const tries = new Tally<string>();

/** Fails every try of its exec until `succeedOn` (0-based try index); never, without it. */
class Flaky extends Node<Count> {
  constructor(
    options: ConstructorParameters<typeof Node>[0],
    private readonly succeedOn?: number,
  ) {
    super(options);
  }
  override prep(shared: Count): string {
    return shared.token;
  }
  override exec(token: string): string {
    tries.add(token, this.name!);
    if (this.succeedOn === undefined || this.currentRetry < this.succeedOn) throw new Error(`try ${this.currentRetry}`);
    return 'ok';
  }
}

/** Two quick steps, then a flaky one: the flaky step runs continued, not as a job's own step. */
function afterTwoSteps(name: string, flaky: () => Flaky) {
  return defineFlow(name, () => {
    const a = new Node({ name: 'a' });
    const b = new Node({ name: 'b' });
    a.next(b).next(flaky());
    return new Flow(a);
  });
}
const thirdTime = afterTwoSteps('third-time', () => new Flaky({ name: 'flaky', maxRetries: 3, wait: 0.01 }, 2));
const neverWorks = afterTwoSteps('never-works', () => new Flaky({ name: 'flaky', maxRetries: 3, wait: 0.01 }));

/** Jobs added to the default step queue so far (BullMQ's `added` events). */
async function jobsAdded(redis: RedisHarness): Promise<number> {
  const entries = await redis.connection.xrange(`${redis.prefix}:${redis.keys.stepQueue}:events`, '-', '+');
  return entries.filter(([, fields]) => fields[fields.indexOf('event') + 1] === 'added').length;
}

type Talk = { n: number; limit: number };

/** Asks the other agent `limit` times, one question per step. */
class Asker extends Node<Talk> {
  override prep(shared: Talk): Promise<Message | undefined> {
    return this.ask('continuation-answers', { n: shared.n });
  }
  override post(shared: Talk): string | undefined {
    shared.n += 1;
    return shared.n < shared.limit ? 'again' : undefined;
  }
}

/** Answers `limit` questions, one per step. */
class Answerer extends Node<Talk> {
  override prep(): Promise<Message | undefined> {
    return this.receive('continuation-answers');
  }
  override async post(shared: Talk, question: Message): Promise<string | undefined> {
    await this.reply(question, question.body);
    shared.n += 1;
    return shared.n < shared.limit ? 'again' : undefined;
  }
}

function looping(node: Node<Talk>): Flow {
  node.on('again', node);
  return new Flow(node);
}
const asking = defineFlow('asking', () => looping(new Asker({ name: 'ask' })));
const answering = defineFlow('answering', () => looping(new Answerer({ name: 'answer' })));

/** Jobs workers took from the default step queue so far (BullMQ's `active` events). */
async function jobsActivated(redis: RedisHarness): Promise<number> {
  const entries = await redis.connection.xrange(`${redis.prefix}:${redis.keys.stepQueue}:events`, '-', '+');
  return entries.filter(([, fields]) => fields[fields.indexOf('event') + 1] === 'active').length;
}

describe('step continuation on a worker', () => {
  const setup = useRedisHarness();

  it('runs a run of 40 steps with fewer jobs than steps, and with a job per step at continueSteps 0', async () => {
    const redis = await setup('continue-count', { flows: [counting], workers: 0 });
    const worker = await redis.worker({ concurrency: 1 });
    const continued = await redis.engine.run(counting, { n: 0, until: 40, token: 'a' });
    expect(continued).toMatchObject({ status: 'completed', shared: { n: 40 } });
    const withContinuation = await jobsAdded(redis);
    await worker.close();

    await redis.worker({ concurrency: 1, continueSteps: 0 });
    const stepped = await redis.engine.run(counting, { n: 0, until: 40, token: 'b' });
    expect(stepped).toMatchObject({ status: 'completed', shared: { n: 40 } });
    expect((await redis.engine.history(stepped.id)).map((record) => record.step)).toEqual(
      Array.from({ length: 40 }, (_, i) => i),
    );
    expect((await jobsAdded(redis)) - withContinuation).toBe(40);
    // A chain ends after 50 steps or one second: at least one step went without a job.
    expect(withContinuation).toBeLessThan(40);
    expect((await redis.engine.history(continued.id)).map((record) => record.step)).toEqual(
      Array.from({ length: 40 }, (_, i) => i),
    );
  });

  it('gives a continued step that fails a try a task of its own, counting its tries on', async () => {
    const redis = await setup('continue-retry', { flows: [thirdTime, neverWorks] });
    const token = `retry-${redis.prefix}`;
    const result = await redis.engine.run(thirdTime, { n: 0, until: 0, token });
    expect(result.status).toBe('completed');
    expect(tries.of(token)).toEqual(['flaky', 'flaky', 'flaky']);
    const history = await redis.engine.history(result.id);
    expect(history.map((record) => [record.node, record.tries])).toEqual([
      ['a', 1],
      ['b', 1],
      ['flaky', 3],
    ]);
  });

  it('fails a continued step for good after exactly its maxRetries tries', async () => {
    const redis = await setup('continue-fail', { flows: [neverWorks] });
    const token = `fail-${redis.prefix}`;
    const result = await redis.engine.run(neverWorks, { n: 0, until: 0, token });
    expect(result.status).toBe('failed');
    expect(tries.of(token)).toEqual(['flaky', 'flaky', 'flaky']);
    const info = await redis.engine.get(result.id);
    expect(info?.errors.map((error) => error.attempt)).toEqual([0, 1, 2]);
  });

  it('runs a parked run it wakes in the same job; no wake is left delayed, none left taken', async () => {
    const redis = await setup('continue-talk', { flows: [asking, answering], workers: 0 });
    const worker = await redis.worker({ concurrency: 2 });
    const answerer = await redis.engine.start(answering, { n: 0, limit: 5 });
    await redis.until(answerer.id, 'the answerer to park', (info) => info.status === 'waiting');
    const before = await jobsActivated(redis);
    const asker = await redis.engine.start(asking, { n: 0, limit: 5 });
    const [asked, answered] = await Promise.all([asker.result(), answerer.result()]);
    expect(asked).toMatchObject({ status: 'completed', shared: { n: 5 } });
    expect(answered).toMatchObject({ status: 'completed', shared: { n: 5 } });
    // 10 wakes and 10 next steps, nearly all run in the job of the asker's first step (a chain
    // ends after 50 steps or one second: a few more jobs on a slow machine), not 20 jobs.
    expect((await jobsActivated(redis)) - before).toBeLessThanOrEqual(6);
    await worker.close(); // its last removals and releases were sent before its connections closed
    const delayed = await redis.connection.zcard(`${redis.prefix}:${redis.keys.stepQueue}:delayed`);
    expect(delayed).toBe(0);
    const taken = await redis.scanKeys();
    expect(taken.filter((key) => key.includes(':workers:taken:'))).toEqual([]);
  });
});
