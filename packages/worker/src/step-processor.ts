import { DelayedError, type Job } from 'bullmq';
import { QueueflowError, toErrorRecord, type ErrorRecord, type Json, type JsonObject, type RunError } from '@queueflow/runtime';
import {
  diffShared,
  encodeCheckpoint,
  executeItem,
  executeStep,
  resumeFanOut,
  runErrorOf,
  walkCheckpoint,
  type Checkpoint,
  type ChildOutcome,
  type CompiledGraph,
  type FanOutRequest,
  type FlowRegistry,
  type StepContext,
  type OutgoingMessage,
  type ParkRequest,
  type StepOutcome,
  type StepTarget,
  StepMailbox,
} from '@queueflow/runtime/interpreter';
import { CheckpointCache } from './checkpoint-cache.js';
import { FanOutCache, type FanOutBasics } from './fan-out-cache.js';
import { RetryStep } from './retry-step.js';
import { childRunId } from './fan-out-store.js';
import type { ChildReport, CommitFields } from './run-store.js';
import type { ChildEndedResult, CommitResult } from './script-replies.js';
import type { Stores } from './stores.js';
import { isFinal, type StoredRun } from './stored-run.js';
import { ITEM_JOB, StepQueue, type ItemJobData, type StepJobData } from './step-queue.js';

export interface StepProcessorOptions {
  /** Largest serialized checkpoint, in bytes. */
  maxCheckpointBytes: number;
  /** How long a refused step (other code deployed) waits before another try, in ms. */
  refusalDelayMs: number;
  /**
   * Longest a parked run sleeps before it looks at its mailbox again, in ms: a safety net for
   * a wake-up lost in a crash between a message's delivery and its wake.
   */
  parkRecheckMs: number;
}

type CommitMode = 'next' | 'retry' | 'completed' | 'failed';

/**
 * Processes step jobs on a worker: loads the run, takes the step with the step interpreter,
 * commits the outcome (guarded by the step counter) and enqueues what follows. Every path is
 * idempotent: a delivery that finds the run past its step re-enqueues whatever the run needs
 * next (see {@link StepProcessor.ensureProgress}), which recovers from a crash between a commit
 * and the enqueue that follows it.
 */
export class StepProcessor {
  /** Abort controllers of the steps running here, by run id (cancel events abort them). */
  private readonly running = new Map<string, AbortController>();
  private readonly runs = new CheckpointCache();
  private readonly fanOutCache: FanOutCache;

  constructor(
    private readonly stores: Stores,
    private readonly queue: StepQueue,
    private readonly registry: FlowRegistry,
    private readonly options: StepProcessorOptions,
  ) {
    this.fanOutCache = new FanOutCache(stores.fanOuts);
  }

  /** The BullMQ processor. */
  async process(job: Job, token?: string): Promise<void> {
    if (job.name === ITEM_JOB) return this.processItem(job as Job<ItemJobData>, token);
    return this.processStep(job as Job<StepJobData>, token);
  }

  /** Aborts the `exec` of a run's step running here (a cancel request). */
  abort(runId: string): void {
    this.running.get(runId)?.abort(new QueueflowError('RUN_CANCELLED', `run '${runId}' was cancelled`));
  }

  /**
   * A job failed for good outside the interpreter (it stalled too often, or the worker kept
   * failing on it): record that on the run, as an ordinary failure, so nothing waits forever.
   */
  async jobFailed(job: Job, error: Error): Promise<void> {
    const data = job.data as StepJobData | ItemJobData;
    const record: ErrorRecord = {
      name: error.name,
      message: `step job ${job.id} failed: ${error.message}`,
      retryable: false,
      at: Date.now(),
      ...(job.attemptsMade ? { attempt: job.attemptsMade - 1 } : {}),
    };
    const run = await this.stores.runs.load(data.runId);
    if (!run || isFinal(run.status) || run.step !== data.step) return;
    if (job.name === ITEM_JOB) {
      const fanOut = await this.fanOutCache.get(run.id, run.step);
      if (fanOut) await this.itemEnded(run.id, run.step, (data as ItemJobData).index, fanOut.request, { status: 'failed', error: record });
      return;
    }
    await this.commit(run, 'failed', { errorRecords: [record], runError: runErrorOf(record) });
  }

  private async processStep(job: Job<StepJobData>, token: string | undefined): Promise<void> {
    // A wake job always reads the run: it follows a park, which no cache of this worker saw.
    const cached = job.data.park === undefined ? this.runs.take(job.data.runId, job.data.step) : undefined;
    const run = cached ?? (await this.stores.runs.load(job.data.runId));
    if (!run) return; // expired or never started
    const parked = run.status === 'waiting' && run.replay.parked !== undefined;
    if (job.data.park !== undefined && job.data.park !== run.parkCount) {
      // A wake of an earlier park: the run has parked again or moved on since.
      return isFinal(run.status) ? this.ensureProgress(run) : undefined;
    }
    if (parked && job.data.park === undefined) return this.ensureProgress(run); // it waits for its wake job
    if (!isFinal(run.status) && job.data.step > run.step) {
      // A job is enqueued only after its step was committed; should one still arrive first,
      // it waits a moment rather than being dropped.
      await job.moveToDelayed(Date.now() + 100, token);
      throw new DelayedError(`step ${job.data.step} of run '${run.id}' arrived before step ${run.step} was committed`);
    }
    if (isFinal(run.status) || run.step !== job.data.step) return this.ensureProgress(run);
    const graph = await this.graphFor(run, job, token);
    if (run.cancel) {
      await this.commit(run, 'failed', {});
      return;
    }
    const checkpoint = await this.checkpointOf(run);
    // Not awaited: it goes out before this step's commit on the same connection, so Redis
    // applies it first, and the step does not wait a round trip for it.
    if (run.status === 'queued') this.stores.runs.markStarted(run.id).catch(() => {});
    const controller = new AbortController();
    this.running.set(run.id, controller);
    try {
      const reservations = { reserve: (ordinal: number, address: string) => this.stores.mailboxes.reserve(run.id, run, ordinal, address) };
      const ctx: StepContext = {
        attempt: (job.data.attemptBase ?? 0) + job.attemptsMade,
        fanOut: true,
        signal: controller.signal,
        runtime: { runId: run.id, flowName: run.flow },
        mailbox: new StepMailbox(reservations, { runId: run.id, step: run.step }, run.replay, Date.now),
      };
      if (run.status === 'waiting' && !parked) {
        const fanOut = await this.stores.fanOuts.fanOutOf(run.id);
        if (!fanOut || fanOut.ended < fanOut.total) return; // not every child has ended yet
        const outcomes = (await this.stores.fanOuts.outcomesOf(run.id, fanOut.total)) as ChildOutcome[];
        const resumed = await resumeFanOut(graph, checkpoint, outcomes, ctx);
        return await this.apply(run, graph, resumed.outcome, resumed.conflicts);
      }
      return await this.apply(run, graph, await executeStep(graph, checkpoint, ctx));
    } finally {
      this.running.delete(run.id);
    }
  }

  /** The run's checkpoint; a fan-out child's first one starts from its parent's snapshot. */
  private async checkpointOf(run: StoredRun): Promise<Checkpoint> {
    const checkpoint = JSON.parse(run.checkpoint) as Checkpoint;
    if (checkpoint.shared === undefined) {
      const fanOut = run.parent && (await this.fanOutCache.get(run.parent.id, run.parent.step));
      if (!fanOut) throw new Error(`the fan-out snapshot of run '${run.parent?.id}' is gone (expired?)`);
      checkpoint.shared = JSON.parse(fanOut.snapshot) as JsonObject;
    }
    return checkpoint;
  }

  /** Commits a step's outcome and enqueues what follows it. */
  private async apply(
    run: StoredRun,
    graph: CompiledGraph,
    outcome: StepOutcome,
    conflicts: CommitFields['conflicts'] = [],
  ): Promise<void> {
    if (outcome.type === 'failed') {
      const errorRecords = outcome.errors.includes(outcome.error) ? outcome.errors : [...outcome.errors, outcome.error];
      await this.commit(run, 'failed', { errorRecords, runError: runErrorOf(outcome.error) });
      return;
    }
    let checkpoint: string;
    try {
      checkpoint = encodeCheckpoint(outcome.checkpoint, this.options.maxCheckpointBytes);
    } catch (error) {
      const record = toErrorRecord(error, { retryable: false, node: outcome.checkpoint.frames.at(-1)?.node, at: Date.now() });
      await this.commit(run, 'failed', { errorRecords: [...outcome.errors, record], runError: runErrorOf(record) });
      return;
    }
    switch (outcome.type) {
      case 'next': {
        // The next step's job is added together with the commit (one round trip, not two), and
        // after it on the same connection, so Redis has the commit before the job. Should the
        // commit be refused, the job is harmless: it finds the run elsewhere (ensureProgress).
        const fields = { checkpoint, target: outcome.target, conflicts, errorRecords: outcome.errors, outbox: outcome.outbox };
        // Remembered before the next job exists, so that job finds it; forgotten if refused.
        this.runs.remember({ ...run, status: 'running', step: run.step + 1, attempt: 0, target: outcome.target, checkpoint, replay: { sent: 0 } });
        const [result] = await Promise.all([this.commit(run, 'next', fields), this.queue.addStep(run.id, run.step + 1, outcome.target)]);
        if (result !== 'committed') this.runs.forget(run.id);
        return;
      }
      case 'retry': {
        const result = await this.commit(run, 'retry', { checkpoint, errorRecords: outcome.errors });
        if (result === 'committed') throw new RetryStep(outcome.error, outcome.delayMs);
        return;
      }
      case 'completed':
        await this.commit(
          run,
          'completed',
          {
            checkpoint,
            conflicts,
            errorRecords: outcome.errors,
            outbox: outcome.outbox,
            ...(outcome.lastAction === undefined ? {} : { lastAction: outcome.lastAction }),
          },
          outcome.checkpoint.shared,
        );
        return;
      case 'fan-out':
        return this.startFanOut(run, graph, outcome.checkpoint, checkpoint, outcome.fanOut, outcome.outbox);
      case 'park':
        return this.park(run, outcome);
    }
  }

  /** Parks the run on a mailbox and enqueues its wake job (see park-run.lua). */
  private async park(run: StoredRun, outcome: Extract<StepOutcome, { type: 'park' }>): Promise<void> {
    const { result, parkCount, ready } = await this.stores.mailboxes.park(run, outcome.park, outcome.sentTotal, outcome.outbox);
    if (result === 'stale') {
      const current = await this.stores.runs.load(run.id);
      return current ? this.ensureProgress(current) : undefined;
    }
    if (result !== 'committed') return;
    await this.addWake(run.id, run.step, parkCount, run.target, run.attempt, ready ? undefined : outcome.park);
    // A message that came between the park and its wake job found no job to promote: look again.
    if (!ready && (await this.stores.mailboxes.mailboxSize(outcome.park.address)) > 0) {
      await this.queue.promote([StepQueue.wakeJobId(run.id, run.step, parkCount)]);
    }
  }

  /** The wake job of a park: due at its deadline (or the re-check), now when `park` is undefined. */
  private addWake(runId: string, step: number, parkCount: number, target: StepTarget, attemptBase: number, park?: ParkRequest): Promise<void> {
    const untilDeadline = park?.deadline === null || park === undefined ? Infinity : park.deadline - Date.now();
    const delayMs = park === undefined ? 0 : Math.min(untilDeadline, this.options.parkRecheckMs);
    return this.queue.addWake(runId, step, parkCount, target, attemptBase, delayMs);
  }

  /**
   * Commits, and does what follows a refused or cancelling commit. A fan-out child that ends
   * here reports to its parent in the same commit; `finalShared` is its `shared` when completed.
   */
  private async commit(run: StoredRun, mode: CommitMode, fields: CommitFields, finalShared?: JsonObject): Promise<CommitResult> {
    const report = run.parent ? await this.childReport(run, mode, fields, finalShared) : undefined;
    const { result, parent } = await this.stores.runs.commit(run.id, run, mode, fields, report);
    if (result === 'stale') {
      const current = await this.stores.runs.load(run.id);
      if (current) await this.ensureProgress(current);
    }
    if (parent && report) await this.followChildEnded(report.parent.id, report.parent.step, parent);
    return result;
  }

  /** How a child's end is reported to its parent, should this commit end it. */
  private async childReport(run: StoredRun, mode: CommitMode, fields: CommitFields, finalShared?: JsonObject): Promise<ChildReport | undefined> {
    const parent = run.parent!;
    const fanOut = await this.fanOutCache.get(parent.id, parent.step);
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
  private async followChildEnded(parentId: string, parentStep: number, result: ChildEndedResult): Promise<void> {
    switch (result.type) {
      case 'recorded': {
        if (result.startIndex === undefined) return;
        const fanOut = await this.fanOutCache.get(parentId, parentStep);
        if (fanOut) await this.startChildren(parentId, parentStep, fanOut, [result.startIndex]);
        return;
      }
      case 'fan-in':
        return this.queue.addStep(parentId, parentStep, { node: undefined, maxAttempts: 1 });
      case 'parent-ended': {
        const fanOut = await this.fanOutCache.get(parentId, parentStep);
        if (fanOut) await this.stores.fanOuts.cancelChildren(parentId, parentStep, fanOut.request);
        return;
      }
      case 'duplicate': {
        const parent = await this.stores.runs.load(parentId);
        if (parent) await this.ensureProgress(parent);
        return;
      }
      case 'ignored':
        return;
    }
  }

  private async startFanOut(
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
      return current ? this.ensureProgress(current) : undefined;
    }
    if (result !== 'committed') return;
    const basics = this.fanOutCache.remember(run.id, run.step + 1, {
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
  private async startChildren(parentId: string, parentStep: number, fanOut: FanOutBasics, indices: number[], items?: Json[]): Promise<void> {
    const { request } = fanOut;
    if (request.kind === 'items') {
      const inputs = await Promise.all(
        indices.map(async (index) => ({
          index,
          item: items ? (items[index] ?? null) : (JSON.parse((await this.stores.fanOuts.itemOf(parentId, index)) ?? 'null') as Json),
        })),
      );
      return this.queue.addItems(parentId, parentStep, inputs, request.maxAttempts);
    }
    const target = fanOut.childTarget ?? (await this.stores.runs.load(childRunId(parentId, parentStep, indices[0]!)))?.target;
    if (!target) return;
    await this.queue.addFirstSteps(
      indices.map((index) => childRunId(parentId, parentStep, index)),
      target,
    );
  }

  private async processItem(job: Job<ItemJobData>, token: string | undefined): Promise<void> {
    const { runId, step, index } = job.data;
    // A cheap check first: the items of a parent that has ended (failed fast, cancelled) stop.
    const status = await this.stores.runs.status(runId);
    if (status !== 'waiting') return;
    const fanOut = await this.fanOutCache.get(runId, step);
    if (fanOut?.request.kind !== 'items') return;
    const { request } = fanOut;
    const graph = await this.graphFor({ id: runId, flow: fanOut.flow, fingerprint: fanOut.fingerprint }, job, token);
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

  private async itemEnded(parentId: string, parentStep: number, index: number, request: FanOutRequest, outcome: ChildOutcome): Promise<void> {
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

  /**
   * Re-enqueues whatever `run` needs next; every enqueue is idempotent. Called when a delivery
   * finds its run past its step: the delivery that committed may have died before enqueueing.
   */
  async ensureProgress(run: StoredRun): Promise<void> {
    if (isFinal(run.status)) return this.reportEnded(run);
    if (run.status !== 'waiting') return this.queue.addStep(run.id, run.step, run.target);
    if (run.replay.parked) return this.addWake(run.id, run.step, run.parkCount, run.target, run.attempt, run.replay.parked);
    const fanOut = await this.stores.fanOuts.fanOutOf(run.id);
    if (!fanOut || fanOut.step !== run.step) return;
    if (fanOut.ended >= fanOut.total) return this.queue.addStep(run.id, run.step, { node: undefined, maxAttempts: 1 });
    const basics = await this.fanOutCache.get(run.id, run.step);
    if (!basics) return;
    const outcomes = await this.stores.fanOuts.outcomesOf(run.id, fanOut.total);
    const pending = Array.from({ length: fanOut.started }, (_, i) => i).filter((i) => !outcomes[i]);
    if (fanOut.request.kind === 'items') return this.startChildren(run.id, run.step, basics, pending);
    for (const index of pending) {
      const child = await this.stores.runs.load(childRunId(run.id, run.step, index));
      if (child) await this.ensureProgress(child);
    }
  }

  /** An ended child whose parent may not have heard of it (a redelivery): report it again. */
  private async reportEnded(run: StoredRun): Promise<void> {
    if (!run.parent) return;
    const fanOut = await this.fanOutCache.get(run.parent.id, run.parent.step);
    if (!fanOut) return;
    let outcome: ChildOutcome;
    if (run.status === 'completed') {
      const { shared } = await this.checkpointOf(run);
      outcome = {
        status: 'completed',
        patch: diffShared(JSON.parse(fanOut.snapshot) as JsonObject, shared),
        ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
      };
    } else if (run.status === 'failed') {
      const last = (await this.stores.runs.info(run.id))?.errors.at(-1);
      outcome = { status: 'failed', error: last ?? { name: 'Error', message: run.error?.message ?? 'failed', retryable: false } };
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

  /**
   * The graph for `run`, built by this worker. A worker whose graph has another shape (other
   * code deployed mid-run) or lacks the flow refuses the step: the job goes back to the delayed
   * set without using up a try, so a worker with the matching code can take it.
   */
  private async graphFor(
    run: Pick<StoredRun, 'id' | 'flow' | 'fingerprint'>,
    job: Job,
    token: string | undefined,
  ): Promise<CompiledGraph> {
    let problem: string;
    try {
      const graph = this.registry.graph(run.flow);
      if (graph.fingerprint === run.fingerprint) return graph;
      problem = `flow '${run.flow}' has graph fingerprint ${graph.fingerprint} on this worker but ${run.fingerprint} in run '${run.id}' (other code deployed?)`;
    } catch (error) {
      problem = `this worker cannot build flow '${run.flow}' of run '${run.id}': ${(error as Error).message}`;
    }
    await this.stores.runs.noteRefusal(run.id, `${new Date().toISOString()} ${problem}`);
    await job.moveToDelayed(Date.now() + this.options.refusalDelayMs, token);
    throw new DelayedError(problem);
  }
}

function childFailedError(request: FanOutRequest, index: number, record: ErrorRecord | undefined): RunError {
  const owner = request.kind === 'walks' ? request.flow : request.node;
  return {
    name: 'QueueflowError',
    code: 'CHILD_FAILED',
    message: `child ${index} of '${owner}' failed: ${record?.message ?? 'it was cancelled'}`,
    ...(record?.node ? { node: record.node } : {}),
    ...(record?.attempt !== undefined ? { attempts: record.attempt + 1 } : {}),
  };
}
