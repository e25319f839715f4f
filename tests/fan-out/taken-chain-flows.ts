/**
 * Flows of the tests of taken children on worker processes (tests/fault/sig*-taken-chain), loaded by `queueflow worker
 * --flows` and by the test's engine client. Node code tells the test what it did through files
 * in `params.markerDir`.
 *
 * - `review-lanes-steps`: a ParallelBatchFlow of five children, one at a time (`concurrency: 1`);
 *   each child walks a → b → c, each node appending `<index><node>` to `shared.log`. Node b of
 *   child 2 hangs on its first execution, after writing `<markerDir>/b2-first` (pid); a later
 *   execution writes `b2-again` (pid) and goes on.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject } from '@queueflow/runtime';

interface Params {
  markerDir: string;
  index: number;
  [key: string]: unknown;
}
interface Shared {
  log?: string[];
}

class Lane extends Node<Shared, Params> {
  override async exec(): Promise<void> {
    if (this.name === 'b' && this.params.index === 2) {
      try {
        writeFileSync(join(this.params.markerDir, 'b2-first'), String(process.pid), { flag: 'wx' });
        await new Promise((resolve) => setTimeout(resolve, 120_000));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        writeFileSync(join(this.params.markerDir, 'b2-again'), String(process.pid));
      }
    }
  }
  override post(shared: Shared): void {
    shared.log = [...(shared.log ?? []), `${this.params.index}${this.name}`];
  }
}

class Lanes extends ParallelBatchFlow<Shared, Params> {
  override prep(): JsonObject[] {
    return [0, 1, 2, 3, 4].map((index) => ({ index }));
  }
}

export const reviewLanesSteps = defineFlow('review-lanes-steps', () => {
  const a = new Lane({ name: 'a' });
  a.next(new Lane({ name: 'b' })).next(new Lane({ name: 'c' }));
  return new Lanes(new Flow(a, { name: 'lane' }), { name: 'lanes', concurrency: 1 });
});

/**
 * `review-lanes-slow`: eight children, one at a time, each one node whose exec writes
 * `<markerDir>/started-<index>` (pid) and takes 300 ms; its post appends the index to `shared.log`.
 */
class SlowLane extends Node<Shared, Params> {
  override async exec(): Promise<void> {
    writeFileSync(join(this.params.markerDir, `started-${this.params.index}`), String(process.pid));
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  override post(shared: Shared): void {
    shared.log = [...(shared.log ?? []), String(this.params.index)];
  }
}

class EightLanes extends ParallelBatchFlow<Shared, Params> {
  override prep(): JsonObject[] {
    return Array.from({ length: 8 }, (_, index) => ({ index }));
  }
}

export const reviewLanesSlow = defineFlow(
  'review-lanes-slow',
  () => new EightLanes(new SlowLane({ name: 'slow' }), { name: 'lanes', concurrency: 1 }),
);
