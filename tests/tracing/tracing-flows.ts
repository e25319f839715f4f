/**
 * Flows for the tracing test, loaded by worker processes. `traced`: `first` sends a message to
 * `params.address`, `loop` visits itself `loops` times, `fan` (a ParallelBatchFlow) runs two
 * child runs of `child`, `items` (a ParallelBatchNode) three items, and `last` (on queue
 * `traced-last`) fails its first try. `listener` waits for the message `first` sent.
 */
import { defineFlow, Flow, Node, ParallelBatchFlow, ParallelBatchNode } from '@queueflow/runtime';

interface Params {
  address?: string;
  loops?: number;
  [key: string]: unknown;
}
type S = { loops?: number; items?: number[]; heard?: string };

class First extends Node<S, Params> {
  override async post(): Promise<void> {
    await this.send(this.params.address!, { hello: 'listener' });
  }
}

class Loop extends Node<S, Params> {
  override async exec(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  override post(shared: S): string | undefined {
    shared.loops = (shared.loops ?? 0) + 1;
    return shared.loops < (this.params.loops ?? 1) ? 'again' : undefined;
  }
}

class Child extends Node<S> {
  override async exec(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

class Fan extends ParallelBatchFlow<S> {
  override prep(): object[] {
    return [{ i: 0 }, { i: 1 }];
  }
}

class Items extends ParallelBatchNode<S> {
  override prep(): number[] {
    return [1, 2, 3];
  }
  override async exec(item: number): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return item * 2;
  }
  override post(shared: S, _p: unknown, results: number[]): void {
    shared.items = results;
  }
}

class Last extends Node<S> {
  constructor() {
    // A queue of its own, which only the second worker of the test serves: the run's steps
    // deterministically run on both worker processes.
    super({ name: 'last', maxRetries: 2, queue: 'traced-last' });
  }
  override exec(): void {
    if (this.currentRetry === 0) throw new Error('the first try of last fails');
  }
}

export const traced = defineFlow('traced', () => {
  const first = new First({ name: 'first' });
  const loop = new Loop({ name: 'loop' });
  loop.on('again', loop);
  first.next(loop);
  loop
    .next(new Fan(new Child({ name: 'child' }), { name: 'fan' }))
    .next(new Items({ name: 'items' }))
    .next(new Last());
  return new Flow(first);
});

class Listen extends Node<S, Params> {
  override async prep(): Promise<string> {
    const message = await this.receive(this.params.address!);
    return JSON.stringify(message?.body);
  }
  override post(shared: S, heard: string): void {
    shared.heard = heard;
  }
}

export const listener = defineFlow('listener', () => new Flow(new Listen({ name: 'listen' })));
