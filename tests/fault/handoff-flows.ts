/**
 * The flow of the child-end hand-off fault test (sigkill-child-end-handoff.int.test.ts), loaded by
 * its `queueflow worker` processes: a ParallelBatchFlow of eight lanes, each child run adding its
 * index to the parent's `done` (a child merged twice would add it twice).
 */
import { Flow, Node, ParallelBatchFlow, defineFlow, type JsonObject } from '@queueflow/runtime';

export const LANES = 8;

interface LaneShared {
  done?: number[];
}

class Lane extends Node<LaneShared, { index: number }> {
  override exec(): number {
    return this.params.index;
  }
  override post(shared: LaneShared, _prep: unknown, index: number): void {
    shared.done = [...(shared.done ?? []), index];
  }
}

class Lanes extends ParallelBatchFlow<LaneShared> {
  override prep(): JsonObject[] {
    return Array.from({ length: LANES }, (_, index) => ({ index }));
  }
}

export const handoffLanes = defineFlow(
  'handoff-lanes',
  () => new Lanes(new Flow(new Lane({ name: 'lane' })), { name: 'lanes' }),
);
