/**
 * A worker runs a run's next step straight after the step a job brought, in the same job
 * (`WorkerOptions.continueSteps`; issue 17, item 5): a run's steps then cost no BullMQ job each.
 * The semantics stay those of a job per step: a continued step that fails a try gets a task of its
 * own that counts its tries on, a step that fails for good used exactly its `maxRetries`, a budget
 * wait holds no slot, and `continueSteps: 0` gives every step a job.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
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
});
