import type { JsonObject } from '../json/json.js';
import type { FanOutRequest, StepTarget } from '../interpreter/step-types.js';
import { decodeShared } from './codec.js';
import type { RunStore } from './run-store.js';

/** What every child of a fan-out needs from its parent; it does not change while they run. */
export interface FanOutBasics {
  /** The request without per-child data (params, items). */
  request: FanOutRequest;
  /** The parent's `shared` when it fanned out: read-only, shared by every child. */
  snapshot: JsonObject;
  /** The parent's flow and graph fingerprint. */
  flow: string;
  fingerprint: string;
  /** Runs: the children's first target. */
  childTarget?: StepTarget;
}

/**
 * The fan-outs whose children this driver runs, by parent and step: thousands of children read
 * the same snapshot and request, so a driver reads (and decodes) them once. An entry never goes
 * stale: a parent's fan-out at a given step is written once.
 */
export class FanOutCache {
  private readonly entries = new Map<string, FanOutBasics>();

  constructor(
    private readonly store: RunStore,
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
    const [fanOut, snapshot] = await Promise.all([this.store.fanOutOf(parentId), this.store.snapshotOf(parentId)]);
    if (!fanOut || fanOut.step !== step || snapshot === undefined) return undefined;
    const { request, flow, fingerprint, childTarget } = fanOut;
    return this.remember(parentId, step, {
      request,
      snapshot: decodeShared(snapshot),
      flow,
      fingerprint,
      ...(childTarget ? { childTarget } : {}),
    });
  }
}
