import { DelayedError, type Job } from 'bullmq';
import { QueueflowError, toErrorRecord, type ErrorRecord, type JsonObject } from '@queueflow/runtime';
import {
  encodeCheckpoint,
  executeStep,
  resumeFanOut,
  runErrorOf,
  StepMailbox,
  warn,
  type Checkpoint,
  type ChildOutcome,
  type CompiledGraph,
  type FlowRegistry,
  type ParkRequest,
  type StepContext,
  type StepOutcome,
  type StepTarget,
} from '@queueflow/runtime/interpreter';
import { CheckpointCache } from './checkpoint-cache.js';
import { FanOutCache } from './fan-out-cache.js';
import { FanOutCoordinator } from './fan-out-coordinator.js';
import { RetryStep } from './retry-step.js';
import type { CommitFields } from './run-store.js';
import type { CommitResult } from './script-replies.js';
import { ITEM_JOB, StepQueue, type ItemJobData, type StepJobData } from './step-queue.js';
import type { Stores } from './stores.js';
import { isFinal, type StoredRun } from './stored-run.js';

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
  private readonly fanOut: FanOutCoordinator;
  /** The flows this worker runs, with their graph fingerprints. */
  private readonly runnable: (readonly [string, string])[];
  /** Runs whose refused step this worker has warned about (a refused step comes back every few seconds). */
  private readonly refusalsWarned = new Set<string>();

  constructor(
    private readonly stores: Stores,
    private readonly queue: StepQueue,
    private readonly registry: FlowRegistry,
    private readonly options: StepProcessorOptions,
  ) {
    this.fanOutCache = new FanOutCache(stores.fanOuts);
    this.runnable = registry.names().map((name) => [name, registry.graph(name).fingerprint] as const);
    this.fanOut = new FanOutCoordinator(stores, queue, this.fanOutCache, this);
  }

  /** The BullMQ processor. */
  async process(job: Job, token?: string): Promise<void> {
    if (job.name === ITEM_JOB) return this.fanOut.processItem(job as Job<ItemJobData>, token);
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
      if (fanOut)
        await this.fanOut.itemEnded(run.id, run.step, (data as ItemJobData).index, fanOut.request, {
          status: 'failed',
          error: record,
        });
      return;
    }
    await this.commit(run, 'failed', { errorRecords: [record], runError: runErrorOf(record) });
  }

  private async processStep(job: Job<StepJobData>, token: string | undefined): Promise<void> {
    // A wake job always reads the run: it follows a park, which no cache of this worker saw.
    const cached = job.data.park === undefined ? this.runs.take(job.data.runId, job.data.step) : undefined;
    const run = cached ?? (await this.stores.runs.loadForStep(job.data.runId, this.runnable));
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
    const controller = new AbortController();
    this.running.set(run.id, controller);
    try {
      const reservations = {
        reserve: (ordinal: number, address: string) => this.stores.mailboxes.reserve(run.id, run, ordinal, address),
      };
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
  async checkpointOf(run: StoredRun): Promise<Checkpoint> {
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
      const record = toErrorRecord(error, {
        retryable: false,
        node: outcome.checkpoint.frames.at(-1)?.node,
        at: Date.now(),
      });
      await this.commit(run, 'failed', { errorRecords: [...outcome.errors, record], runError: runErrorOf(record) });
      return;
    }
    switch (outcome.type) {
      case 'next': {
        // The next step's job is added together with the commit (one round trip, not two), and
        // after it on the same connection, so Redis has the commit before the job. Should the
        // commit be refused, the job is harmless: it finds the run elsewhere (ensureProgress).
        const fields = {
          checkpoint,
          target: outcome.target,
          conflicts,
          errorRecords: outcome.errors,
          outbox: outcome.outbox,
        };
        // Remembered before the next job exists, so that job finds it; forgotten if refused.
        this.runs.remember({
          ...run,
          status: 'running',
          step: run.step + 1,
          attempt: 0,
          target: outcome.target,
          checkpoint,
          replay: { sent: 0 },
        });
        const [result] = await Promise.all([
          this.commit(run, 'next', fields),
          this.queue.addStep(run.id, run.step + 1, outcome.target),
        ]);
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
        return this.fanOut.startFanOut(run, graph, outcome.checkpoint, checkpoint, outcome.fanOut, outcome.outbox);
      case 'park':
        return this.park(run, outcome);
    }
  }

  /** Parks the run on a mailbox and enqueues its wake job (see park-run.lua). */
  private async park(run: StoredRun, outcome: Extract<StepOutcome, { type: 'park' }>): Promise<void> {
    const { result, parkCount, ready } = await this.stores.mailboxes.park(
      run,
      outcome.park,
      outcome.replay,
      outcome.outbox,
    );
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
  private addWake(
    runId: string,
    step: number,
    parkCount: number,
    target: StepTarget,
    attemptBase: number,
    park?: ParkRequest,
  ): Promise<void> {
    const untilDeadline = park?.deadline === null || park === undefined ? Infinity : park.deadline - Date.now();
    const delayMs = park === undefined ? 0 : Math.min(untilDeadline, this.options.parkRecheckMs);
    return this.queue.addWake(runId, step, parkCount, target, attemptBase, delayMs);
  }

  /**
   * Commits, and does what follows a refused or cancelling commit. A fan-out child that ends
   * here reports to its parent in the same commit; `finalShared` is its `shared` when completed.
   */
  private async commit(
    run: StoredRun,
    mode: CommitMode,
    fields: CommitFields,
    finalShared?: JsonObject,
  ): Promise<CommitResult> {
    const report = run.parent ? await this.fanOut.childReport(run, mode, fields, finalShared) : undefined;
    const { result, parent } = await this.stores.runs.commit(run.id, run, mode, fields, report);
    if (result === 'stale') {
      const current = await this.stores.runs.load(run.id);
      if (current) await this.ensureProgress(current);
    }
    if (parent && report) await this.fanOut.followChildEnded(report.parent.id, report.parent.step, parent);
    return result;
  }

  /**
   * Re-enqueues whatever `run` needs next; every enqueue is idempotent. Called when a delivery
   * finds its run past its step: the delivery that committed may have died before enqueueing.
   */
  async ensureProgress(run: StoredRun): Promise<void> {
    if (isFinal(run.status)) return this.fanOut.reportEnded(run);
    if (run.status !== 'waiting') return this.queue.addStep(run.id, run.step, run.target);
    if (run.replay.parked)
      return this.addWake(run.id, run.step, run.parkCount, run.target, run.attempt, run.replay.parked);
    return this.fanOut.ensureChildren(run);
  }

  /**
   * The graph for `run`, built by this worker. A worker whose graph has another shape (other
   * code deployed mid-run) or lacks the flow refuses the step: the job goes back to the delayed
   * set without using up a try, so a worker with the matching code can take it.
   */
  async graphFor(
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
    await this.stores.runs.noteRefusal(run.id, `${problem} (at ${new Date().toISOString()})`);
    if (!this.refusalsWarned.has(run.id)) {
      if (this.refusalsWarned.size >= 1000) this.refusalsWarned.clear();
      this.refusalsWarned.add(run.id);
      warn('QF_STEP_REFUSED', `${problem}; the step goes back to the queue for a worker with the matching code`);
    }
    await job.moveToDelayed(Date.now() + this.options.refusalDelayMs, token);
    throw new DelayedError(problem);
  }
}
