/**
 * Fan-out children made `running` and started from the driver's cache, in
 * batches: a parent cancelled while its children are being made and started leaves no child
 * that runs on and completes after the cancel.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject } from '@queueflow/runtime';
import { useRedisHarness } from '../support/redis-harness.js';
import { gate, type Gate } from '../support/node-probes.js';

type Shared = { token: string; n: number };
const gates = new Map<string, { reached: Gate; go: Gate; execs: number }>();

/** A child's one step: the first child that runs tells the test, and all wait for its gate. */
class Child extends Node<Shared> {
  override prep(shared: Shared): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    const g = gates.get(token)!;
    g.execs += 1;
    g.reached.open();
    await g.go.promise;
  }
}

class Fan extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return Array.from({ length: shared.n }, (_, i) => ({ i }));
  }
}

const fanning = defineFlow('review-fan-cancel', () => new Fan(new Flow(new Child({ name: 'child' }))));

describe('review: cancel of a fan-out parent while its children start', () => {
  const setup = useRedisHarness();

  it('no child of a cancelled parent completes', async () => {
    const redis = await setup('review-fan-cancel', { flows: [fanning], workers: 0 });
    await redis.worker({ concurrency: 4 });
    const token = `fan-${redis.prefix}`;
    const g = { reached: gate(), go: gate(), execs: 0 };
    gates.set(token, g);
    const parent = await redis.engine.start(fanning, { token, n: 1000 });
    await g.reached.promise;
    await redis.engine.cancel(parent.id);
    g.go.open();
    expect((await parent.result()).status).toBe('cancelled');
    const children = await redis.engine.children(parent.id, { limit: 1000 });
    for (const child of children) {
      const info = await redis.until(child.runId!, `child ${child.runId!} to end`, (run) =>
        ['completed', 'failed', 'cancelled'].includes(run.status),
      );
      expect(info.status, `child ${child.runId!}`).toBe('cancelled');
    }
    gates.delete(token);
  });
});
