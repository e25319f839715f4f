/**
 * Flows whose nodes name queues, for the routing tests. Worker processes load this module, so it
 * only exports FlowDefinitions. Each node records the process that ran it (`process.pid`), which
 * the tests compare with the pids of the workers serving each queue.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineFlow, Flow, Node, ParallelBatchNode } from '@queueflow/runtime';

export interface RoutedShared {
  /** Each node visited and the process that ran its step. */
  ran: { node: string; pid: number }[];
  /** The processes that ran the items of the fan-out. */
  itemPids?: number[];
}

/** Records where its step ran. */
class Where extends Node<RoutedShared> {
  override exec(): number {
    return process.pid;
  }
  override post(shared: RoutedShared, _prep: unknown, pid: number): void {
    shared.ran.push({ node: this.name!, pid });
  }
}

/** Fans out four items; each records where it ran, and `post` where the fan-in ran. */
class WhereItems extends ParallelBatchNode<RoutedShared> {
  override prep(): number[] {
    return [1, 2, 3, 4];
  }
  override exec(): number {
    return process.pid;
  }
  override post(shared: RoutedShared, _prep: unknown, pids: number[]): void {
    shared.itemPids = pids;
    shared.ran.push({ node: this.name!, pid: process.pid });
  }
}

/** parse (default) → summarise (llm) → embed (llm, fan-out of items) → record (default). */
export const routed = defineFlow('routed', () => {
  const parse = new Where({ name: 'parse' });
  parse
    .next(new Where({ name: 'summarise', queue: 'llm' }))
    .next(new WhereItems({ name: 'embed', queue: 'llm' }))
    .next(new Where({ name: 'record' }));
  return new Flow(parse);
});

/** One node on queue `gpu`, which no worker serves until a test starts one. */
export const gpuFirst = defineFlow('gpu-first', () => new Flow(new Where({ name: 'render', queue: 'gpu' })));

/** Waits on mailbox `address` (from params) in a step of queue `llm`: its wake goes to that queue. */
class AwaitsAnswer extends Node<RoutedShared & { answer?: unknown }> {
  override async exec(): Promise<unknown> {
    const message = await this.receive(String(this.params.address));
    return message?.body;
  }
  override post(shared: RoutedShared & { answer?: unknown }, _prep: unknown, answer: unknown): void {
    shared.answer = answer;
    shared.ran.push({ node: this.name!, pid: process.pid });
  }
}

export const awaitsOnLlm = defineFlow(
  'awaits-on-llm',
  () => new Flow(new AwaitsAnswer({ name: 'await', queue: 'llm' })),
);

/**
 * On queue `llm`: the first try anywhere writes `first` (its pid) in `params.markerDir` and hangs
 * (its worker is killed); the next writes `again` (its pid) and returns.
 */
class HangsOnce extends Node<RoutedShared> {
  override async exec(): Promise<void> {
    const dir = String(this.params.markerDir);
    if (!existsSync(join(dir, 'first'))) {
      writeFileSync(join(dir, 'first'), String(process.pid));
      await new Promise(() => {});
    }
    writeFileSync(join(dir, 'again'), String(process.pid));
  }
  override post(shared: RoutedShared): void {
    shared.ran.push({ node: this.name!, pid: process.pid });
  }
}

export const hangsOnLlm = defineFlow('hangs-on-llm', () => new Flow(new HangsOnce({ name: 'hang', queue: 'llm' })));
