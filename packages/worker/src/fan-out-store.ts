import type { ErrorRecord, RunError } from '@queueflow/runtime';
import type { ChildOutcome, FanOutRequest, OutgoingMessage, StepTarget } from '@queueflow/runtime/interpreter';
import type { RedisKeys } from './redis-keys.js';
import type { RunStore } from './run-store.js';
import type { ScriptedRedis } from './scripts.js';
import {
  childEndedResult,
  commitResult,
  outboxArgs,
  wakeParked,
  type ChildEndedResult,
  type CommitResult,
  type StoreOptions,
} from './script-replies.js';
import { position, type StoredRun } from './stored-run.js';

/** Children cancelled at once when a fan-out ends early. */
const CANCEL_BATCH = 100;

/** A waiting parent's fan-out as stored. */
export interface StoredFanOut {
  request: FanOutRequest;
  total: number;
  started: number;
  ended: number;
  failed: number;
  step: number;
}

/**
 * Fan-outs in Redis: committing a step that fans out (and creating the child records), recording
 * each child's end on its parent, and what a waiting parent's children need to read.
 */
export class FanOutStore {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    private readonly options: StoreOptions,
    private readonly runs: RunStore,
  ) {}

  /** Commits a fan-out step and creates the child records (fan-out.lua). */
  async fanOut(
    run: StoredRun,
    fields: {
      checkpoint: string;
      target: StepTarget;
      request: FanOutRequest;
      snapshot: string;
      total: number;
      startNow: number;
      /** Walks: the children's first target. */
      childTarget?: StepTarget;
      /** Walks: each child's checkpoint JSON without `shared`; items: each item's JSON. */
      perChild: string[];
      /** The step's sends. */
      outbox: OutgoingMessage[];
    },
  ): Promise<CommitResult> {
    const [code, wakes] = (await this.redis.fanOut(
      ...this.keys.runKeys(run.id),
      position(run),
      fields.checkpoint,
      JSON.stringify(fields.target),
      Date.now(),
      JSON.stringify(storedRequest(fields.request)),
      fields.snapshot,
      fields.total,
      fields.startNow,
      fields.request.kind,
      this.keys.events(),
      run.id,
      this.options.retentionSeconds,
      run.flow,
      run.fingerprint,
      this.keys.run(''),
      fields.childTarget ? JSON.stringify(fields.childTarget) : '',
      this.keys.prefix,
      ...outboxArgs(fields.outbox),
      ...fields.perChild,
    )) as [number, string[]];
    await wakeParked(this.options, wakes);
    return commitResult(code);
  }

  /** Records a child's end on its parent (child-ended.lua). */
  async childEnded(
    parentId: string,
    parentStep: number,
    index: number,
    outcome: ChildOutcome,
    failFast: boolean,
    parentError: RunError,
    errorRecord?: ErrorRecord,
  ): Promise<ChildEndedResult> {
    const [code, next] = (await this.redis.childEnded(
      ...this.keys.runKeys(parentId),
      parentStep,
      index,
      JSON.stringify(outcome),
      outcome.status === 'completed' ? 1 : 0,
      failFast ? 1 : 0,
      JSON.stringify(parentError),
      Date.now(),
      this.keys.events(),
      parentId,
      this.options.retentionSeconds,
      errorRecord ? JSON.stringify(errorRecord) : '',
    )) as [number, number];
    return childEndedResult(code, next);
  }

  /**
   * Cancels a fan-out's child runs (walks), and theirs in turn. Item children need nothing: their
   * jobs find the parent ended and stop.
   */
  async cancelChildren(parentId: string, parentStep: number, request: FanOutRequest): Promise<void> {
    if (request.kind !== 'walks') return;
    const total = Number(await this.redis.hget(this.keys.fanOut(parentId), 'total')) || 0;
    // In batches, each sent as one pipeline (ioredis): thousands of children, not thousands of round trips.
    for (let first = 0; first < total; first += CANCEL_BATCH) {
      const ids = Array.from({ length: Math.min(CANCEL_BATCH, total - first) }, (_, i) =>
        childRunId(parentId, parentStep, first + i),
      );
      await Promise.all(ids.map((id) => this.cancelChild(id)));
    }
  }

  private async cancelChild(id: string): Promise<void> {
    if ((await this.runs.cancel(id)) !== 'cancelled-waiting') return;
    // The child was itself waiting on a fan-out: cancel that one too.
    const [step, fanOut] = await Promise.all([this.redis.hget(this.keys.run(id), 'step'), this.fanOutOf(id)]);
    if (fanOut && step !== null) await this.cancelChildren(id, Number(step), fanOut.request);
  }

  async fanOutOf(parentId: string): Promise<StoredFanOut | undefined> {
    const [request, total, started, ended, failed, step] = await this.redis.hmget(
      this.keys.fanOut(parentId),
      'request',
      'total',
      'started',
      'ended',
      'failed',
      'step',
    );
    if (request === null || request === undefined) return undefined;
    return {
      request: JSON.parse(request) as FanOutRequest,
      total: Number(total),
      started: Number(started),
      ended: Number(ended),
      failed: Number(failed),
      step: Number(step),
    };
  }

  /** A fan-out's request (without per-child data) and snapshot, and its parent's flow identity. */
  async fanOutBasics(
    parentId: string,
  ): Promise<
    { request: FanOutRequest; snapshot: string; step: number; flow: string; fingerprint: string } | undefined
  > {
    const [[request, snapshot, step], [flow, fingerprint]] = await Promise.all([
      this.redis.hmget(this.keys.fanOut(parentId), 'request', 'snapshot', 'step'),
      this.redis.hmget(this.keys.run(parentId), 'flow', 'fingerprint'),
    ]);
    if (!request || typeof snapshot !== 'string' || !flow || !fingerprint) return undefined;
    return { request: JSON.parse(request) as FanOutRequest, snapshot, step: Number(step), flow, fingerprint };
  }

  /** Input of item `index` of a ParallelBatchNode fan-out. */
  async itemOf(parentId: string, index: number): Promise<string | null> {
    return this.redis.hget(this.keys.fanOut(parentId), `i${index}`);
  }

  /** Outcomes recorded so far, by child index. */
  async outcomesOf(parentId: string, total: number): Promise<(ChildOutcome | undefined)[]> {
    const hash = await this.redis.hgetall(this.keys.outcomes(parentId));
    const outcomes = new Array<ChildOutcome | undefined>(total);
    for (const [index, json] of Object.entries(hash)) outcomes[Number(index)] = JSON.parse(json) as ChildOutcome;
    return outcomes;
  }
}

/** Id of child `index` of the fan-out a parent made at `parentStep` (see fan-out.lua). */
export function childRunId(parentId: string, parentStep: number, index: number): string {
  return `${parentId}.${parentStep}.${index}`;
}

/** The request as stored on the parent: without the per-child data (params, items). */
function storedRequest(request: FanOutRequest): FanOutRequest {
  return request.kind === 'walks' ? { ...request, params: [] } : { ...request, items: [] };
}
