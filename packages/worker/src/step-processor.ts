import { DelayedError, type Job } from 'bullmq';
import { QueueflowError, toErrorRecord, type ErrorRecord, type RunError } from '@queueflow/runtime';
import {
  diffShared,
  encodeCheckpoint,
  executeItem,
  executeStep,
  resumeFanOut,
  runErrorOf,
  targetOf,
  walkCheckpoint,
  type Checkpoint,
  type ChildOutcome,
  type CompiledGraph,
  type FanOutRequest,
  type FlowRegistry,
  type StepContext,
  type StepOutcome,
} from '@queueflow/runtime/interpreter';
import type { Json } from '@queueflow/runtime';
import { CheckpointCache } from './checkpoint-cache.js';
import { RetryStep } from './retry-step.js';
import { childRunId, isFinal, type ChildEndedResult, type CommitFields, type RunStore, type StoredRun } from './run-store.js';
import { ITEM_JOB, type ItemJobData, type StepJobData, type StepQueue } from './step-queue.js';

export interface StepProcessorOptions {
  /** Largest serialized checkpoint, in bytes. */
  maxCheckpointBytes: number;
  /** How long a refused step (other code deployed) waits before another try, in ms. */
  refusalDelayMs: number;
}

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
  private readonly cache = new CheckpointCache();

  constructor(
    private readonly store: RunStore,
    private readonly queue: StepQueue,
    private readonly registry: FlowRegistry,
    private readonly options: StepProcessorOptions,
  ) {}

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
   * failing on it): record that on the run so nothing waits for it forever.
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
    const run = await this.store.load(data.runId);
    if (!run || isFinal(run.status) || run.step !== data.step) return;
    if (job.name === ITEM_JOB) {
      const fanOut = await this.store.fanOutOf(run.id);
      if (!fanOut) return;
      const item = data as ItemJobData;
      const result = await this.store.childEnded(
        run.id,
        run.step,
        item.index,
        { status: 'failed', error: record },
        fanOut.request.onItemError === 'fail-fast',
        childFailedError(fanOut.request, item.index, record),
        record,
      );
      return this.followChildEnded(run.id, run.step, fanOut.request, result);
    }
    const committed = await this.store.commit(run.id, run.step, 'failed', { errorRecord: record, runError: runErrorOf(record) });
    if (committed !== 'missing') await this.afterEnded(run.id);
  }

  private async processStep(job: Job<StepJobData>, token: string | undefined): Promise<void> {
    const run = this.cache.take(job.data.runId, job.data.step) ?? (await this.store.load(job.data.runId));
    if (!run) return; // expired or never started
    if (!isFinal(run.status) && job.data.step > run.step) {
      // A job can only be enqueued after its step was committed; should one still arrive
      // first, it waits a moment rather than being dropped.
      await job.moveToDelayed(Date.now() + 100, token);
      throw new DelayedError(`step ${job.data.step} of run '${run.id}' arrived before step ${run.step} was committed`);
    }
    if (isFinal(run.status) || run.step !== job.data.step) return this.ensureProgress(run);
    const graph = await this.graphFor(run, job, token);
    if (run.cancel) {
      await this.store.commit(run.id, run.step, 'failed', {});
      return this.afterEnded(run.id);
    }
    const checkpoint = await this.store.checkpointOf(run);
    const controller = new AbortController();
    this.running.set(run.id, controller);
    try {
      const ctx: StepContext = {
        attempt: job.attemptsMade,
        fanOut: true,
        signal: controller.signal,
        runtime: { runId: run.id, flowName: run.flow },
      };
      if (run.status === 'waiting') {
        const fanOut = await this.store.fanOutOf(run.id);
        if (!fanOut || fanOut.ended < fanOut.total) return; // not every child has ended yet
        const outcomes = (await this.store.outcomesOf(run.id, fanOut.total)) as ChildOutcome[];
        const resumed = await resumeFanOut(graph, checkpoint, outcomes, ctx);
        return await this.apply(run, graph, resumed.outcome, resumed.conflicts);
      }
      return await this.apply(run, graph, await executeStep(graph, checkpoint, ctx));
    } finally {
      this.running.delete(run.id);
    }
  }

  /** Commits a step's outcome and enqueues what follows it. */
  private async apply(
    run: StoredRun,
    graph: CompiledGraph,
    outcome: StepOutcome,
    conflicts: CommitFields['conflicts'] = [],
  ): Promise<void> {
    if (outcome.type === 'failed') {
      const result = await this.store.commit(run.id, run.step, 'failed', {
        errorRecord: outcome.error,
        runError: runErrorOf(outcome.error),
      });
      return this.afterCommit(run, result);
    }
    let checkpoint: string;
    try {
      checkpoint = encodeCheckpoint(outcome.checkpoint, this.options.maxCheckpointBytes);
    } catch (error) {
      const record = toErrorRecord(error, { retryable: false, node: outcome.checkpoint.frames.at(-1)?.node, at: Date.now() });
      const result = await this.store.commit(run.id, run.step, 'failed', { errorRecord: record, runError: runErrorOf(record) });
      return this.afterCommit(run, result);
    }
    switch (outcome.type) {
      case 'next': {
        // The next step's job is added together with the commit (one round trip, not two). If
        // the commit turns out stale, the job is harmless: it finds the run elsewhere and only
        // re-enqueues what the run needs (ensureProgress).
        const [result] = await Promise.all([
          this.store.commit(run.id, run.step, 'next', { checkpoint, target: outcome.target, conflicts }),
          this.queue.addStep(run.id, run.step + 1, outcome.target),
        ]);
        if (result !== 'committed') return this.afterCommit(run, result);
        const committed = { ...run, status: 'running' as const, step: run.step + 1, attempt: 0, target: outcome.target, checkpoint };
        return this.cache.remember(committed);
      }
      case 'retry': {
        const result = await this.store.commit(run.id, run.step, 'retry', { checkpoint, errorRecord: outcome.error });
        if (result === 'committed') throw new RetryStep(outcome.error, outcome.delayMs);
        return this.afterCommit(run, result);
      }
      case 'completed': {
        const result = await this.store.commit(run.id, run.step, 'completed', {
          checkpoint,
          conflicts,
          ...(outcome.lastAction === undefined ? {} : { lastAction: outcome.lastAction }),
        });
        return this.afterCommit(run, result, outcome.checkpoint);
      }
      case 'fan-out':
        return this.startFanOut(run, graph, outcome.checkpoint, checkpoint, outcome.fanOut);
    }
  }

  private async afterCommit(run: StoredRun, result: string, final?: Checkpoint): Promise<void> {
    if (result === 'missing') return;
    if (result === 'stale') {
      const current = await this.store.load(run.id);
      return current ? this.ensureProgress(current) : undefined;
    }
    return this.afterEnded(run.id, final);
  }

  /** A run ended (or may have): a fan-out child reports to its parent. */
  private async afterEnded(runId: string, final?: Checkpoint): Promise<void> {
    const run = await this.store.load(runId);
    if (!run?.parent || !isFinal(run.status)) return;
    const { parent } = run;
    const fanOut = await this.store.fanOutOf(parent.id);
    if (!fanOut || fanOut.step !== parent.step) return;
    let outcome: ChildOutcome;
    let record: ErrorRecord | undefined;
    if (run.status === 'completed') {
      const shared = final?.shared ?? (await this.store.checkpointOf(run)).shared;
      outcome = {
        status: 'completed',
        patch: diffShared(await this.store.snapshotOf(parent.id), shared),
        ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
      };
    } else if (run.status === 'failed') {
      record = { name: run.error?.name ?? 'Error', message: run.error?.message ?? 'failed', retryable: false, ...pick(run.error) };
      outcome = { status: 'failed', error: record };
    } else {
      outcome = { status: 'cancelled' };
    }
    const result = await this.store.childEnded(
      parent.id,
      parent.step,
      parent.index,
      outcome,
      fanOut.request.onItemError === 'fail-fast',
      childFailedError(fanOut.request, parent.index, record),
      record,
    );
    await this.followChildEnded(parent.id, parent.step, fanOut.request, result);
  }

  /** Does what recording a child's end asked for: start the next child, resume, or cancel. */
  private async followChildEnded(
    parentId: string,
    parentStep: number,
    request: FanOutRequest,
    result: ChildEndedResult,
  ): Promise<void> {
    switch (result.type) {
      case 'recorded':
        if (result.startIndex !== undefined) await this.startChildren(parentId, parentStep, request, [result.startIndex]);
        return;
      case 'fan-in':
        return this.queue.addStep(parentId, parentStep, { node: undefined, maxAttempts: 1 });
      case 'parent-ended':
        return this.store.cancelChildren(parentId, parentStep, request);
      case 'duplicate': {
        const parent = await this.store.load(parentId);
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
  ): Promise<void> {
    const total = request.kind === 'walks' ? request.params.length : request.items.length;
    const startNow = Math.min(request.concurrency ?? total, total);
    const snapshot = JSON.stringify(checkpoint.shared);
    let perChild: string[];
    let childTarget;
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
    const result = await this.store.fanOut(run, {
      checkpoint: encoded,
      target: targetOfFanOut(request),
      request,
      snapshot,
      total,
      startNow,
      ...(childTarget ? { childTarget } : {}),
      perChild,
    });
    if (result !== 'committed') return this.afterCommit(run, result);
    await this.startChildren(
      run.id,
      run.step + 1,
      request,
      Array.from({ length: startNow }, (_, i) => i),
      request.kind === 'items' ? request.items : undefined,
      childTarget,
    );
  }

  /** Enqueues the first step of the children at `indices` (idempotent: deterministic job ids). */
  private async startChildren(
    parentId: string,
    parentStep: number,
    request: FanOutRequest,
    indices: number[],
    items?: Json[],
    childTarget?: ReturnType<typeof targetOf>,
  ): Promise<void> {
    if (request.kind === 'items') {
      const inputs = await Promise.all(
        indices.map(async (index) => ({
          index,
          item: items ? (items[index] ?? null) : (JSON.parse((await this.store.itemOf(parentId, index)) ?? 'null') as Json),
        })),
      );
      return this.queue.addItems(parentId, parentStep, inputs, request.maxAttempts);
    }
    const target = childTarget ?? (await this.store.load(childRunId(parentId, parentStep, indices[0]!)))?.target;
    if (!target) return;
    await this.queue.addFirstSteps(
      indices.map((index) => childRunId(parentId, parentStep, index)),
      target,
    );
  }

  private async processItem(job: Job<ItemJobData>, token: string | undefined): Promise<void> {
    const { runId, step, index } = job.data;
    const parent = await this.store.load(runId);
    if (!parent || parent.status !== 'waiting' || parent.step !== step) return;
    const graph = await this.graphFor(parent, job, token);
    const fanOut = await this.store.fanOutOf(runId);
    if (fanOut?.request.kind !== 'items' || fanOut.step !== step) return;
    const { request } = fanOut;
    const controller = new AbortController();
    const ctx: StepContext = {
      attempt: job.attemptsMade,
      fanOut: true,
      signal: controller.signal,
      runtime: { runId, flowName: parent.flow },
    };
    const outcome = await executeItem(graph, request.node, request.params, job.data.item, ctx);
    if (outcome.type === 'retry') {
      await this.store.appendError(runId, outcome.error);
      throw new RetryStep(outcome.error, outcome.delayMs);
    }
    const child: ChildOutcome =
      outcome.type === 'completed'
        ? { status: 'completed', ...(outcome.value === undefined ? {} : { value: outcome.value }) }
        : { status: 'failed', error: outcome.error };
    const record = outcome.type === 'failed' ? outcome.error : undefined;
    const result = await this.store.childEnded(
      runId,
      step,
      index,
      child,
      request.onItemError === 'fail-fast',
      childFailedError(request, index, record),
      record,
    );
    await this.followChildEnded(runId, step, request, result);
  }

  /**
   * Re-enqueues whatever `run` needs next; every enqueue is idempotent. Called when a delivery
   * finds its run past its step: the delivery that committed may have died before enqueueing.
   */
  async ensureProgress(run: StoredRun): Promise<void> {
    if (isFinal(run.status)) return this.afterEnded(run.id);
    if (run.status !== 'waiting') return this.queue.addStep(run.id, run.step, run.target);
    const fanOut = await this.store.fanOutOf(run.id);
    if (!fanOut || fanOut.step !== run.step) return;
    if (fanOut.ended >= fanOut.total) return this.queue.addStep(run.id, run.step, { node: undefined, maxAttempts: 1 });
    const outcomes = await this.store.outcomesOf(run.id, fanOut.total);
    const pending = Array.from({ length: fanOut.started }, (_, i) => i).filter((i) => !outcomes[i]);
    if (fanOut.request.kind === 'items') return this.startChildren(run.id, run.step, fanOut.request, pending);
    for (const index of pending) {
      const child = await this.store.load(childRunId(run.id, run.step, index));
      if (child) await this.ensureProgress(child);
    }
  }

  /**
   * The graph for `run`, built by this worker. A worker whose graph has another shape (other
   * code deployed mid-run) or lacks the flow refuses the step: the job goes back to the delayed
   * set without using up a try, so a worker with the matching code can take it.
   */
  private async graphFor(run: StoredRun, job: Job, token: string | undefined): Promise<CompiledGraph> {
    let graph: CompiledGraph | undefined;
    let problem: string;
    try {
      graph = this.registry.graph(run.flow);
      if (graph.fingerprint === run.fingerprint) return graph;
      problem = `flow '${run.flow}' has graph fingerprint ${graph.fingerprint} on this worker but ${run.fingerprint} in run '${run.id}' (other code deployed?)`;
    } catch (error) {
      problem = `this worker cannot build flow '${run.flow}' of run '${run.id}': ${(error as Error).message}`;
    }
    await this.store.noteRefusal(run.id, `${new Date().toISOString()} ${problem}`);
    await job.moveToDelayed(Date.now() + this.options.refusalDelayMs, token);
    throw new DelayedError(problem);
  }
}

function targetOfFanOut(request: FanOutRequest): { node: string; maxAttempts: number } {
  return { node: request.kind === 'walks' ? request.flow : request.node, maxAttempts: 1 };
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

function pick(error: RunError | undefined): Partial<ErrorRecord> {
  if (!error) return {};
  return {
    ...(error.code ? { code: error.code } : {}),
    ...(error.node ? { node: error.node } : {}),
    ...(error.attempts !== undefined ? { attempt: error.attempts - 1 } : {}),
  };
}
