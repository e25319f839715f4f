/**
 * Issue 18, item 3: a cancel cascading to a fan-out's children survives the death of its
 * canceller. The store records the cascade with the parent's cancel (cancel-run.lua, in the
 * parent's partition) and drops it once every child is cancelled; a worker's heartbeat finishes a
 * cascade that has not gone on for a while (resumeCascades). Here the canceller "dies" right after
 * its first script: the test calls the store's `cancel` alone, the children still run, and the
 * cascade's record is made old. On one Redis, and on the cluster with 16 partitions, where the
 * children live in other partitions than their parent.
 */
import { describe, expect, it } from 'vitest';
import { Flow, Node, ParallelBatchFlow, defineFlow, type JsonObject } from '@queueflow/runtime';
import { RedisRunStore, withScripts, type RedisConnection } from '@queueflow/worker';
import { aborted } from '../support/node-probes.js';
import { useRedisHarness, type RedisHarness } from '../support/redis-harness.js';
import { inspectingConnection } from '../support/redis-prefix.js';
import { waitFor } from '../support/wait-for.js';

const CHILDREN = 6;

/** Children running now, per run id of their parent. */
const running = new Map<string, number>();

class Hold extends Node<JsonObject, { parent: string }> {
  override async exec(): Promise<void> {
    running.set(this.params.parent, (running.get(this.params.parent) ?? 0) + 1);
    await aborted(this.signal); // until its run is cancelled
  }
}

class Holds extends ParallelBatchFlow<JsonObject> {
  override prep(shared: JsonObject): JsonObject[] {
    return Array.from({ length: CHILDREN }, (_, i) => ({ i, parent: shared.parent as string }));
  }
}

const holding = defineFlow('cascade-holds', () => new Holds(new Flow(new Hold({ name: 'hold' })), { name: 'holds' }));

/** A store of the harness's deployment, on a connection of the test's (as a canceller's would be). */
function storeOn(redis: RedisConnection, h: RedisHarness): RedisRunStore {
  return new RedisRunStore(withScripts(redis), h.partitions, {
    retentionSeconds: 3600,
    maxErrors: 50,
    maxStepRecords: 1000,
  });
}

describe('a cancel cascade whose canceller died is finished by a worker', () => {
  const setup = useRedisHarness();

  it.each([
    ['one Redis', false],
    ['the cluster, 16 partitions', true],
  ])(
    'on %s',
    async (_, cluster) => {
      const h = await setup('cascade-resume', { flows: [holding], cluster, concurrency: CHILDREN + 2 });
      const parent = `p${Math.random()}`;
      const run = await h.engine.start(holding, { parent });
      await waitFor('every child to run', () => running.get(parent) === CHILDREN);

      const redis = inspectingConnection(h.url);
      try {
        const store = new RedisRunStore(withScripts(redis), h.partitions, {
          retentionSeconds: 3600,
          maxErrors: 50,
          maxStepRecords: 1000,
        });
        expect((await store.cancel(run.id)).result).toBe('cancelled-waiting');
        const cascades = h.partitions.of(run.id).cascades();
        expect(await h.connection.zscore(cascades, run.id)).not.toBeNull();
        // Nobody cancels the children: the cascade's record says it stalled long ago.
        await h.connection.zadd(cascades, 'XX', 0, run.id);

        const children = await waitFor(
          'every child to be cancelled',
          async () => {
            const found = await h.engine.children(run.id, { limit: CHILDREN });
            return found.every((child) => child.status === 'cancelled') ? found : undefined;
          },
          { timeoutMs: 20_000 },
        );
        expect(children).toHaveLength(CHILDREN);
        await waitFor('the cascade to be done', async () => (await h.connection.zscore(cascades, run.id)) === null);
        expect((await h.engine.get(run.id))?.status).toBe('cancelled');
      } finally {
        redis.disconnect();
      }
    },
    60_000,
  );
});

describe('a cancel cascade of a run retried since', () => {
  const setup = useRedisHarness();

  it('is no longer recorded: nobody goes on cancelling the children the retry keeps', async () => {
    const h = await setup('cascade-reopened', { flows: [holding], cluster: true, concurrency: CHILDREN + 2 });
    const parent = `p${Math.random()}`;
    const run = await h.engine.start(holding, { parent });
    await waitFor('every child to run', () => running.get(parent) === CHILDREN);
    const redis = inspectingConnection(h.url);
    try {
      const store = storeOn(redis, h);
      // The canceller cancels the parent and dies; the run is retried before anyone goes on.
      expect((await store.cancel(run.id)).result).toBe('cancelled-waiting');
      expect(await store.cascadeProgress(run.id, false)).toBe(true);
      await h.engine.retry(run.id);
      expect((await h.engine.get(run.id))?.status).toBe('waiting');
      expect(await store.cascadeProgress(run.id, false)).toBe(false);
      expect(await store.cascadesDue(0)).not.toContain(run.id);
      const children = await h.engine.children(run.id, { limit: CHILDREN });
      expect(children.map((child) => child.status)).toEqual(children.map(() => 'running'));
      await h.engine.cancel(run.id); // a cancel now cascades as ever (and lets the children go)
      await waitFor('every child to be cancelled', async () =>
        (await h.engine.children(run.id, { limit: CHILDREN })).every((child) => child.status === 'cancelled'),
      );
    } finally {
      redis.disconnect();
    }
  }, 60_000);
});

/** The ParallelBatchFlow of the placement case: its children go one at a time (`concurrency: 1`). */
class OneAtATime extends ParallelBatchFlow<JsonObject> {
  override prep(shared: JsonObject): JsonObject[] {
    return Array.from({ length: 2 }, (_, i) => ({ i, parent: shared.parent as string }));
  }
}
const oneAtATime = defineFlow(
  'cascade-one-at-a-time',
  () => new OneAtATime(new Flow(new Hold({ name: 'hold' })), { name: 'one-at-a-time', concurrency: 1 }),
);

describe('a child placed in another partition while its parent was cancelled, by a placer that died', () => {
  const setup = useRedisHarness();

  it('is cancelled by a worker that finds the placement left behind', async () => {
    const h = await setup('placement-resume', { flows: [oneAtATime], cluster: true, concurrency: 4 });
    const parent = `p${Math.random()}`;
    const run = await h.engine.start(oneAtATime, { parent });
    await waitFor('child 0 to run', () => running.get(parent) === 1);
    const redis = inspectingConnection(h.url);
    try {
      const scripted = withScripts(redis);
      const store = storeOn(scripted, h);
      // Child 1 starts, as child 0's end would start it (the fan-out counts it started first).
      const keys = h.partitions.of(run.id);
      await h.connection.hincrby(keys.fanOut(run.id), 'started', 1);
      // The placer reads child 1's input while the parent waits; the parent is cancelled (its
      // cascade finds no child 1); the placer makes child 1 in its partition and dies.
      const place = scripted.placeChildren.bind(scripted);
      scripted.placeChildren = async (...args: Parameters<typeof place>) => {
        await h.engine.cancel(run.id);
        await place(...args);
        throw new Error('the placer died here');
      };
      await expect(store.createChildren(run.id, 1, [1])).rejects.toThrow('the placer died here');
      const child = `${run.id}.1.1`;
      expect(h.partitions.indexOf(child)).not.toBe(h.partitions.indexOf(run.id));
      expect((await h.engine.get(child))?.status).toBe('running'); // for a cancelled parent, with no task
      const [placement] = await h.connection.zrange(keys.placements(), 0, 0);
      expect(placement).toMatch(new RegExp(`^${run.id} `));
      await h.connection.zadd(keys.placements(), 'XX', 0, placement!); // left long ago

      await waitFor('the child to be cancelled', async () => (await h.engine.get(child))?.status === 'cancelled', {
        timeoutMs: 20_000,
      });
      expect(await h.connection.zcard(keys.placements())).toBe(0);
    } finally {
      redis.disconnect();
    }
  }, 60_000);
});
