/**
 * The flows of the fan-out-at-size benchmark (fan-out-at-size.bench.ts), loaded by the driver and
 * by the `queueflow worker` processes it starts: a ParallelBatchNode of `shared.n` no-op items, and
 * a ParallelBatchFlow of `shared.n` children that all write one key.
 */
import { defineFlow, Node, ParallelBatchFlow, ParallelBatchNode, type JsonObject } from '@queueflow/runtime';

class NoOpItems extends ParallelBatchNode<{ n: number; done?: number }> {
  override prep(shared: { n: number }): number[] {
    return Array.from({ length: shared.n }, (_, i) => i);
  }
  override exec(): null {
    return null;
  }
  override post(shared: { done?: number }, _items: unknown, results: unknown[]): void {
    shared.done = results.length;
  }
}

class WriteSame extends Node<{ same?: number }> {
  override post(shared: { same?: number }): void {
    shared.same = Number(this.params.i);
  }
}

class SameKey extends ParallelBatchFlow<{ n: number }> {
  override prep(shared: { n: number }): JsonObject[] {
    return Array.from({ length: shared.n }, (_, i) => ({ i }));
  }
}

export const manyItems = defineFlow('bench-many-items', () => new NoOpItems({ name: 'items', concurrency: 1000 }));
export const sameKey = defineFlow(
  'bench-same-key',
  () => new SameKey(new WriteSame({ name: 'write' }), { name: 'children' }),
);
