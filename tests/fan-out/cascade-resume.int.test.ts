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
import { RedisRunStore, withScripts } from '@queueflow/worker';
import { aborted } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
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
    return Array.from({ length: CHILDREN }, (_, i) => ({ i, parent: String(shared.parent) }));
  }
}

const holding = defineFlow('cascade-holds', () => new Holds(new Flow(new Hold({ name: 'hold' })), { name: 'holds' }));

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
