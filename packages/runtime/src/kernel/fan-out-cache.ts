import type { JsonObject } from '../json/json.js';
import type { FanOutRequest, StepTarget } from '../interpreter/step-types.js';
import { decodeShared } from './codec.js';
import type { LargeValues } from './large-values.js';
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
  /** Reads under way, by key: children starting together read (and decode) the snapshot once. */
  private readonly reading = new Map<string, Promise<FanOutBasics | undefined>>();

  constructor(
    private readonly store: RunStore,
    /** Puts a snapshot whose large values were set apart back together. */
    private readonly values: LargeValues,
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
    const key = `${parentId}.${step}`;
    const cached = this.entries.get(key);
    if (cached) return cached;
    let reading = this.reading.get(key);
    if (!reading) {
      reading = this.read(parentId, step).finally(() => this.reading.delete(key));
      this.reading.set(key, reading);
    }
    return reading;
  }

  private async read(parentId: string, step: number): Promise<FanOutBasics | undefined> {
    const [fanOut, snapshot] = await Promise.all([this.store.fanOutOf(parentId), this.store.snapshotOf(parentId)]);
    if (!fanOut || fanOut.step !== step || snapshot === undefined) return undefined;
    const { request, flow, fingerprint, childTarget } = fanOut;
    const whole = await this.values.inflateOf(snapshot, { id: parentId, flow });
    return this.remember(parentId, step, {
      request,
      snapshot: decodeShared(whole),
      flow,
      fingerprint,
      ...(childTarget ? { childTarget } : {}),
    });
  }
}
