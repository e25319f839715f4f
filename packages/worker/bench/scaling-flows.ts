/**
 * The flow of the fan-out scaling benchmark (fan-out-scaling.bench.ts), loaded by the driver and
 * by every `queueflow worker` process it starts. Each child waits `params.ioMs` on a timer, as a
 * call to a model or a web service would, and records that it ran.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { defineFlow, Node, ParallelBatchFlow, type JsonObject } from '@queueflow/runtime';

interface Shared {
  n: number;
  done?: Record<string, number>;
}

class Call extends Node<Shared> {
  override async exec(): Promise<void> {
    await sleep(Number(this.params.ioMs ?? 0));
  }
  override post(shared: Shared): void {
    (shared.done ??= {})[this.params.key as string] = 1;
  }
}

class Calls extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return Array.from({ length: shared.n }, (_, i) => ({ key: `c${i}` }));
  }
}

export const ioFanOut = defineFlow('bench-io-fan-out', () => new Calls(new Call({ name: 'call' }), { name: 'calls' }));
