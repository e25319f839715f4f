import type { FanOutRequest, StepTarget } from '@queueflow/runtime/interpreter';
import type { FanOutStore } from './fan-out-store.js';

/** What every child of a fan-out needs from its parent; it does not change while they run. */
export interface FanOutBasics {
  /** The request without per-child data (params, items). */
  request: FanOutRequest;
  /** The parent's `shared` when it fanned out, JSON. */
  snapshot: string;
  /** The parent's flow and graph fingerprint. */
  flow: string;
  fingerprint: string;
  /** Walks: the children's first target. */
  childTarget?: StepTarget;
}

/**
 * The fan-outs whose children this worker runs, by parent and step: thousands of children read
 * the same snapshot and request, so a worker reads them from Redis once. An entry never goes
 * stale: a parent's fan-out at a given step is written once.
 */
export class FanOutCache {
  private readonly entries = new Map<string, FanOutBasics>();

  constructor(
    private readonly store: FanOutStore,
    private readonly capacity = 64,
  ) {}

  remember(parentId: string, step: number, basics: FanOutBasics): FanOutBasics {
    const key = `${parentId}.${step}`;
    this.entries.delete(key);
    this.entries.set(key, basics);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return basics;
  }

  /** The basics of the fan-out `parentId` made at `step`, or `undefined` if it is gone. */
  async get(parentId: string, step: number): Promise<FanOutBasics | undefined> {
    const cached = this.entries.get(`${parentId}.${step}`);
    if (cached) return cached;
    const stored = await this.store.fanOutBasics(parentId);
    if (!stored || stored.step !== step) return undefined;
    const { request, snapshot, flow, fingerprint } = stored;
    return this.remember(parentId, step, { request, snapshot, flow, fingerprint });
  }
}
