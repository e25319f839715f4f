import type { Job } from 'bullmq';
import type { ErrorRecord, Json, JsonObject, RunError } from '@queueflow/runtime';
import {
  diffShared,
  recordOfRunError,
  executeItem,
  walkCheckpoint,
  type Checkpoint,
  type ChildOutcome,
  type CompiledGraph,
  type FanOutRequest,
  type OutgoingMessage,
  type StepContext,
  type StepTarget,
} from '@queueflow/runtime/interpreter';
import type { FanOutBasics, FanOutCache } from './fan-out-cache.js';
import { childRunId } from './fan-out-store.js';
import { RetryStep } from './retry-step.js';
import type { ChildReport, CommitFields } from './run-store.js';
import type { ChildEndedResult } from './script-replies.js';
import type { ItemJobData, StepQueue } from './step-queue.js';
import type { Stores } from './stores.js';
import type { StoredRun } from './stored-run.js';

/** What the fan-out coordinator needs from the step processor it works for. */
export interface FanOutHost {
  ensureProgress(run: StoredRun): Promise<void>;
  graphFor(
    run: Pick<StoredRun, 'id' | 'flow' | 'fingerprint'>,
    job: Job,
    token: string | undefined,
  ): Promise<CompiledGraph>;
  checkpointOf(run: StoredRun): Promise<Checkpoint>;
}

type CommitMode = 'next' | 'retry' | 'completed' | 'failed';

/**
 * The fan-out side of a worker (DESIGN "Fan-out"): starting children, running the items of a
 * ParallelBatchNode, reporting each child's end to its parent, and doing what that report asks
 * (start the next child, enqueue the fan-in, cancel the siblings).
 */
export class FanOutCoordinator {
  constructor(
    private readonly stores: Stores,
    private readonly queue: StepQueue,
    private readonly cache: FanOutCache,
    private readonly host: FanOutHost,
  ) {}

  /** A waiting parent's children: re-enqueue those started and not ended, or its fan-in. */
  async ensureChildren(run: StoredRun): Promise<void> {
    const fanOut = await this.stores.fanOuts.fanOutOf(run.id);
    if (!fanOut || fanOut.step !== run.step) return;
    if (fanOut.ended >= fanOut.total) return this.queue.addStep(run.id, run.step, { node: undefined, maxAttempts: 1 });
    const basics = await this.cache.get(run.id, run.step);
    if (!basics) return;
    const outcomes = await this.stores.fanOuts.outcomesOf(run.id, fanOut.total);
    const pending = Array.from({ length: fanOut.started }, (_, i) => i).filter((i) => !outcomes[i]);
    if (fanOut.request.kind === 'items') return this.startChildren(run.id, run.step, basics, pending);
    for (const index of pending) {
      const child = await this.stores.runs.load(childRunId(run.id, run.step, index));
      if (child) await this.host.ensureProgress(child);
    }
  }

  /** How a child's end is reported to its parent, should this commit end it. */
  async childReport(
    run: StoredRun,
    mode: CommitMode,
    fields: CommitFields,
    finalShared?: JsonObject,
  ): Promise<ChildReport | undefined> {
    const parent = run.parent!;
    const fanOut = await this.cache.get(parent.id, parent.step);
    if (!fanOut) return undefined; // the parent's fan-out is gone: nobody waits for this child
    let outcome: ChildOutcome | undefined;
    if (mode === 'completed' && finalShared) {
      outcome = {
        status: 'completed',
        patch: diffShared(JSON.parse(fanOut.snapshot) as JsonObject, finalShared),
        ...(fields.lastAction === undefined ? {} : { lastAction: fields.lastAction }),
      };
    } else if (mode === 'failed' && fields.errorRecords?.length) {
      outcome = { status: 'failed', error: fields.errorRecords[fields.errorRecords.length - 1]! };
    }
    return {
      parent,
      ...(outcome ? { outcome } : {}),
      failFast: fanOut.request.onItemError === 'fail-fast',
      parentError: childFailedError(fanOut.request, parent.index, fields.errorRecords?.at(-1)),
    };
  }

  /** Does what recording a child's end asked for: start the next child, resume, or cancel. */
  async followChildEnded(parentId: string, parentStep: number, result: ChildEndedResult): Promise<void> {
    switch (result.type) {
      case 'recorded': {
        if (result.startIndex === undefined) return;
        const fanOut = await this.cache.get(parentId, parentStep);
        if (fanOut) await this.startChildren(parentId, parentStep, fanOut, [result.startIndex]);
        return;
      }
      case 'fan-in':
        return this.queue.addStep(parentId, parentStep, { node: undefined, maxAttempts: 1 });
      case 'parent-ended': {
        const fanOut = await this.cache.get(parentId, parentStep);
        if (fanOut) await this.stores.fanOuts.cancelChildren(parentId, parentStep, fanOut.request);
        // The parent ended inside a script (failed fast, or cancelled): if it is a child itself,
        // its own parent hears of it now.
        const parent = await this.stores.runs.load(parentId);
        if (parent?.parent) await this.reportEnded(parent);
        return;
      }
      case 'duplicate': {
        const parent = await this.stores.runs.load(parentId);
        if (parent) await this.host.ensureProgress(parent);
        return;
      }
      case 'ignored':
        return;
    }
  }

  /**
   * Commits a fan-out step (fan-out.lua: the parent waits, child records are written, each
   * without `shared`, reading the snapshot stored once) and enqueues the first children.
   */
  async startFanOut(
    run: StoredRun,
    graph: CompiledGraph,
    checkpoint: Checkpoint,
    encoded: string,
    request: FanOutRequest,
    outbox: OutgoingMessage[],
  ): Promise<void> {
    const total = request.kind === 'walks' ? request.params.length : request.items.length;
    const startNow = Math.min(request.concurrency ?? total, total);
    const snapshot = JSON.stringify(checkpoint.shared);
    let perChild: string[];
    let childTarget: StepTarget | undefined;
    if (request.kind === 'walks') {
      // Each child's checkpoint without `shared`: children read the snapshot stored once.
      perChild = request.params.map((_params, index) => {
        const child = walkCheckpoint(graph, request, index, {});
        childTarget ??= child.target;
        return JSON.stringify({ frames: child.checkpoint.frames });
      });
    } else {
      perChild = request.items.map((item) => JSON.stringify(item ?? null));
    }
    const result = await this.stores.fanOuts.fanOut(run, {
      checkpoint: encoded,
      target: { node: request.kind === 'walks' ? request.flow : request.node, maxAttempts: 1 },
      request,
      snapshot,
      total,
      startNow,
      ...(childTarget ? { childTarget } : {}),
      perChild,
      outbox,
    });
    if (result === 'stale') {
      const current = await this.stores.runs.load(run.id);
      return current ? this.host.ensureProgress(current) : undefined;
    }
    if (result !== 'committed') return;
    const basics = this.cache.remember(run.id, run.step + 1, {
      request,
      snapshot,
      flow: run.flow,
      fingerprint: run.fingerprint,
      ...(childTarget ? { childTarget } : {}),
    });
    const first = Array.from({ length: startNow }, (_, i) => i);
    await this.startChildren(run.id, run.step + 1, basics, first, request.kind === 'items' ? request.items : undefined);
  }

  /** Enqueues the first step of the children at `indices` (idempotent: deterministic job ids). */
  private async startChildren(
    parentId: string,
    parentStep: number,
    fanOut: FanOutBasics,
    indices: number[],
    items?: Json[],
  ): Promise<void> {
    const { request } = fanOut;
    if (request.kind === 'items') {
      const inputs = await Promise.all(
        indices.map(async (index) => ({
          index,
          item: items
            ? (items[index] ?? null)
            : (JSON.parse((await this.stores.fanOuts.itemOf(parentId, index)) ?? 'null') as Json),
        })),
      );
      return this.queue.addItems(parentId, parentStep, inputs, request.maxAttempts);
    }
    const target =
      fanOut.childTarget ?? (await this.stores.runs.load(childRunId(parentId, parentStep, indices[0]!)))?.target;
    if (!target) return;
    await this.queue.addFirstSteps(
      indices.map((index) => childRunId(parentId, parentStep, index)),
      target,
    );
  }

  /** Runs one item of a ParallelBatchNode fan-out (an item job), with the node's retry policy. */
  async processItem(job: Job<ItemJobData>, token: string | undefined): Promise<void> {
    const { runId, step, index } = job.data;
    // A cheap check first: the items of a parent that has ended (failed fast, cancelled) stop.
    const status = await this.stores.runs.status(runId);
    if (status !== 'waiting') return;
    const fanOut = await this.cache.get(runId, step);
    if (fanOut?.request.kind !== 'items') return;
    const { request } = fanOut;
    const graph = await this.host.graphFor(
      { id: runId, flow: fanOut.flow, fingerprint: fanOut.fingerprint },
      job,
      token,
    );
    const controller = new AbortController();
    const ctx: StepContext = {
      attempt: job.attemptsMade,
      fanOut: true,
      signal: controller.signal,
      runtime: { runId, flowName: fanOut.flow },
    };
    const outcome = await executeItem(graph, request.node, request.params, job.data.item, ctx);
    const rescued = outcome.type === 'failed' ? outcome.errors.filter((e) => e !== outcome.error) : outcome.errors;
    await this.stores.runs.appendErrors(runId, rescued);
    if (outcome.type === 'retry') throw new RetryStep(outcome.error, outcome.delayMs);
    await this.itemEnded(
      runId,
      step,
      index,
      request,
      outcome.type === 'completed'
        ? { status: 'completed', ...(outcome.value === undefined ? {} : { value: outcome.value }) }
        : { status: 'failed', error: outcome.error },
    );
  }

  /** Records an item's end on its parent and does what that asks for. */
  async itemEnded(
    parentId: string,
    parentStep: number,
    index: number,
    request: FanOutRequest,
    outcome: ChildOutcome,
  ): Promise<void> {
    const record = outcome.status === 'failed' ? outcome.error : undefined;
    const result = await this.stores.fanOuts.childEnded(
      parentId,
      parentStep,
      index,
      outcome,
      request.onItemError === 'fail-fast',
      childFailedError(request, index, record),
      record,
    );
    await this.followChildEnded(parentId, parentStep, result);
  }

  /** An ended child whose parent may not have heard of it (a redelivery): report it again. */
  async reportEnded(run: StoredRun): Promise<void> {
    if (!run.parent) return;
    const fanOut = await this.cache.get(run.parent.id, run.parent.step);
    if (!fanOut) return;
    let outcome: ChildOutcome;
    if (run.status === 'completed') {
      const { shared } = await this.host.checkpointOf(run);
      outcome = {
        status: 'completed',
        patch: diffShared(JSON.parse(fanOut.snapshot) as JsonObject, shared),
        ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
      };
    } else if (run.status === 'failed') {
      outcome = { status: 'failed', error: recordOfRunError(run.error) };
    } else {
      outcome = { status: 'cancelled' };
    }
    const record = outcome.status === 'failed' ? outcome.error : undefined;
    const result = await this.stores.fanOuts.childEnded(
      run.parent.id,
      run.parent.step,
      run.parent.index,
      outcome,
      fanOut.request.onItemError === 'fail-fast',
      childFailedError(fanOut.request, run.parent.index, record),
      record,
    );
    await this.followChildEnded(run.parent.id, run.parent.step, result);
  }
}

export function childFailedError(request: FanOutRequest, index: number, record: ErrorRecord | undefined): RunError {
  const owner = request.kind === 'walks' ? request.flow : request.node;
  return {
    name: 'QueueflowError',
    code: 'CHILD_FAILED',
    message: `child ${index} of '${owner}' failed: ${record?.message ?? 'it was cancelled'}`,
    ...(record?.node ? { node: record.node } : {}),
    ...(record?.attempt !== undefined ? { attempts: record.attempt + 1 } : {}),
  };
}
