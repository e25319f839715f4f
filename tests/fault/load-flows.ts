/**
 * A batch for the reliability-under-load tests, loaded by worker processes. `paced-batch` fans
 * `shared.docs` out as child runs (ParallelBatchFlow); each child visits one node `STEPS` times,
 * `execMs` a visit, and each visit's `post` appends its number to `shared.visits[doc]`. A step
 * committed twice shows as a duplicate in that list, a lost one as a gap. Then it visits `done`.
 */
import { defineFlow, Flow, Node, ParallelBatchFlow } from '@queueflow/runtime';

/** Visits of each document's child. */
export const STEPS = 3;

export interface PacedShared {
  docs: string[];
  visits: Record<string, number[]>;
}

class Visit extends Node<PacedShared, { doc: string; execMs?: number }> {
  override prep(shared: PacedShared): number {
    return (shared.visits[this.params.doc]?.length ?? 0) + 1;
  }
  override async exec(visit: number): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, this.params.execMs ?? 100));
    return visit;
  }
  override post(shared: PacedShared, _prep: number, visit: number): string | undefined {
    (shared.visits[this.params.doc] ??= []).push(visit);
    return visit < STEPS ? 'again' : 'done';
  }
}

class EachDoc extends ParallelBatchFlow<PacedShared> {
  override prep(shared: PacedShared): { doc: string }[] {
    return shared.docs.map((doc) => ({ doc }));
  }
}

export const pacedBatch = defineFlow('paced-batch', () => {
  const visit = new Visit({ name: 'visit' });
  visit.on('again', visit);
  visit.on('done', new Node({ name: 'done' }));
  return new EachDoc(new Flow(visit));
});

/** The shared store of a batch of `count` documents. */
export function pacedShared(count: number, name: string): PacedShared {
  return { docs: Array.from({ length: count }, (_, i) => `${name}-${i}`), visits: {} };
}
