/**
 * A fan-out child that completes after its parent failed fast (between the failure and the cancel
 * that cascades to it) is not recorded on the parent. A retry of the parent must neither run it
 * again nor wait for it for ever: its end is reported to the reopened parent.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Node, ParallelBatchFlow, type JsonObject } from '@queueflow/runtime';
import { gate, Tally, type Gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';

type S = { token: string; done?: number[] };
const execs = new Tally<number>();
const broken = new Set<string>();
const holds = new Map<string, Gate>();
const started1 = new Map<string, Gate>();

/**
 * Child 0 fails while its token is broken, once child 1 is in exec; child 1 holds until its gate
 * opens (ignoring a cancel).
 */
class Child extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<number> {
    const i = Number(this.params.i);
    execs.add(token, i);
    if (i === 0 && broken.has(token)) {
      await started1.get(token)?.promise;
      throw new Error('child 0 has a bug');
    }
    if (i === 1) {
      started1.get(token)?.open();
      await holds.get(token)?.promise;
    }
    return i;
  }
  override post(shared: S, _token: unknown, i: number): void {
    shared.done = [...(shared.done ?? []), i];
  }
}
class Children extends ParallelBatchFlow<S> {
  override prep(): JsonObject[] {
    return [{ i: 0 }, { i: 1 }];
  }
}
const fan = defineFlow('late-child', () => new Children(new Child({ name: 'child' }), { name: 'children' }));

describe('retry of a fan-out whose child completed after the parent failed', () => {
  const setup = useRedisHarness();

  it('reports that child to the reopened parent instead of running it again or waiting for it', async () => {
    const redis = await setup('late-child', { flows: [fan], concurrency: 4 });
    const token = 'late';
    broken.add(token);
    holds.set(token, gate());
    started1.set(token, gate());
    const handle = await redis.engine.start(fan, { token } as S);
    await waitFor('child 1 to be in exec', () => execs.of(token).includes(1));
    const failed = await handle.result();
    expect(failed.status).toBe('failed');
    const parent = (await redis.engine.get(handle.id))!;
    const childId = `${handle.id}.${parent.steps}.1`;
    await redis.until(childId, 'the cascade to cancel child 1', (info) => info.status === 'cancelled');
    // What the race leaves: child 1 committed its completion just before the cascade came, and
    // the parent, failed by then, did not record it.
    await redis.connection.hset(redis.keys.run(childId), 'status', 'completed');
    holds.get(token)!.open();
    // The child's worker finishes its step (its commit refused: the run has ended) and lets go
    // of the job before the retry, so nothing but the retry can report child 1 to the parent.
    const active = `${redis.keys.prefix}:${redis.keys.stepQueue}:active`;
    await waitFor('the worker to let go of child 1', async () => (await redis.connection.llen(active)) === 0);

    broken.delete(token);
    const result = await (await redis.engine.retry(handle.id)).result({ timeoutMs: 30_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(execs.of(token).filter((i) => i === 1)).toHaveLength(1); // not run again
    expect(execs.of(token).filter((i) => i === 0)).toHaveLength(2);
    expect((await redis.engine.children(handle.id)).map((child) => child.status)).toEqual(['completed', 'completed']);
  });
});
