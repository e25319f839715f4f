/**
 * The flow of the README's "Across workers" walk-through: a node that counts to
 * `shared.target`, one step per number, each step taking `params.delayMs` milliseconds, so a
 * run lasts long enough to kill a worker in the middle of it. Every step's `post` appends its
 * number and the worker's pid to `shared.counted`: after the run, each number appears once.
 *
 *   npx queueflow worker --flows packages/examples/dist/tutorial/slow-count.js
 */
import { defineFlow, Flow, Node } from '@queueflow/runtime';

type Count = { target: number; counted?: { n: number; pid: number }[] };

class CountOne extends Node<Count, { delayMs?: number }> {
  override prep(shared: Count): number {
    return (shared.counted?.length ?? 0) + 1;
  }
  override async exec(n: number): Promise<{ n: number; pid: number }> {
    await new Promise((resolve) => setTimeout(resolve, this.params.delayMs ?? 250));
    return { n, pid: process.pid };
  }
  override post(shared: Count, _n: number, counted: { n: number; pid: number }): string | undefined {
    (shared.counted ??= []).push(counted);
    return counted.n < shared.target ? 'next' : undefined;
  }
}

export const slowCount = defineFlow('slow-count', () => {
  const count = new CountOne({ name: 'count-one', maxRetries: 3, wait: 1 });
  count.on('next', count);
  return new Flow(count);
});
