/**
 * A newcomer's probe of throttled child-end announcements (recordChildEnd in run-lifecycle.lua,
 * memory-run-store.ts): a live view of a parent with 301 children hears of it about every 1 %
 * of its children's ends (not each), and its last event is the parent's end.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject, type RunChange } from '@queueflow/runtime';
import { engines, useEngine } from '../conformance/engine-harness.js';

type S = { n: number; sum?: number };
class Fan extends ParallelBatchFlow<S> {
  override prep(shared: S): JsonObject[] {
    return Array.from({ length: shared.n }, (_, i) => ({ i }));
  }
}
class Child extends Node<S> {
  override post(shared: S): void {
    shared.sum = (shared.sum ?? 0) + (this.params.i as number);
  }
}
const fan = defineFlow(
  'review-child-end-changes',
  () => new Flow(new Fan(new Child({ name: 'child' }), { name: 'fan' })),
);

describe.each(engines.filter((name) => name !== 'RedisCluster'))('%s: child-end changes', (name) => {
  const setup = useEngine(name);

  it.each([
    [301, 3],
    [60, 1],
  ])('a fan-out of %i children: one change per %i ends, the last one the end', async (n, every) => {
    const h = await setup('review-child-end-changes', { flows: [fan], concurrency: 4, autoAdvance: true });
    const seen: RunChange[] = [];
    const stop = await h.engine.watch((change) => seen.push(change));
    try {
      const run = await h.engine.start<S>(fan, { n });
      const result = await run.result();
      expect(result.status).toBe('completed');
      await h.until(run.id, 'the run to end', (info) => info.status === 'completed');
      const mine = () => seen.filter((change) => change.runId === run.id);
      // The end's event reaches the listener after result() may resolve: wait for it.
      await import('../support/wait-for.js').then(({ waitFor }) =>
        waitFor('the end event', () => mine().some((change) => change.status === 'completed')),
      );
      const waiting = mine().filter((change) => change.status === 'waiting');
      const ends = Math.floor(n / every);
      expect(waiting.length).toBeGreaterThanOrEqual(ends);
      expect(waiting.length).toBeLessThanOrEqual(ends + 3);
      expect(mine().at(-1)!.status).toBe('completed');
    } finally {
      stop();
    }
  });
});
