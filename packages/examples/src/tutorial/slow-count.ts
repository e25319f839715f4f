/**
 * The flow of the root README's walk-through "Try it: three workers, one killed": a node that
 * counts to `shared.target`, one step per number, each step taking `params.delayMs` milliseconds
 * (250 by default), so a run lasts long enough to kill a worker in the middle of it. Every step's
 * `post` appends its number and the worker's pid to `shared.counted`: after the run, each number
 * appears once. The last number leads (action `done`) to a final step that writes the pid of the
 * worker that finished the run to `shared.finishedBy`.
 *
 *   npx queueflow worker --flows packages/examples/dist/tutorial/slow-count.js
 */
import { defineFlow, Flow, Node } from '@queueflow/runtime';

/** One counted number and the pid of the worker whose step counted it. */
type Counted = { n: number; pid: number };

type Count = { target: number; counted?: Counted[]; finishedBy?: number };

class CountOne extends Node<Count, { delayMs?: number }> {
  override prep(shared: Count): number {
    return (shared.counted?.length ?? 0) + 1;
  }
  override async exec(n: number): Promise<Counted> {
    await new Promise((resolve) => setTimeout(resolve, this.params.delayMs ?? 250));
    return { n, pid: process.pid };
  }
  override post(shared: Count, _n: number, counted: Counted): 'next' | 'done' {
    (shared.counted ??= []).push(counted);
    return counted.n < shared.target ? 'next' : 'done';
  }
}

/** The last step: records which worker finished the run. */
class Finish extends Node<Count> {
  override exec(): number {
    return process.pid;
  }
  override post(shared: Count, _prep: unknown, pid: number): undefined {
    shared.finishedBy = pid;
    return undefined;
  }
}

export const slowCount = defineFlow('slow-count', () => {
  const count = new CountOne({ name: 'count-one', maxRetries: 3, wait: 1 });
  count.on('next', count).on('done', new Finish({ name: 'finish' }));
  return new Flow(count);
});
