import { childFailedError, recordOfRunError } from '../errors/error-record.js';
import type { Checkpoint } from '../interpreter/checkpoint.js';
import { childStart, executeItem } from '../interpreter/fan-out.js';
import type { CompiledGraph } from '../interpreter/graph.js';
import type { Json, JsonObject } from '../json/json.js';
import type {
  StepBudgetPort,
  ChildOutcome,
  FanOutRequest,
  ItemTryOutcome,
  OutgoingMessage,
  StepContext,
  StepTarget,
} from '../interpreter/step-types.js';
import { cancelChildren } from './cancel-run.js';
import type { CheckpointCache } from './checkpoint-cache.js';
import type { Clock } from './clock.js';
import { deltaOf, encodeChildStart, encodeJson, encodeShared } from './codec.js';
import { FanOutCache, type FanOutBasics } from './fan-out-cache.js';
import type { ClaimCheck } from './claim-check.js';
import type { LargeValues } from './large-values.js';
import {
  childRunId,
  type ChildEndedResult,
  type ChildReport,
  type CommitFields,
  type CommitMode,
  type RunStore,
  type StoredRun,
} from './run-store.js';
import { taskOptionsOf, type ItemTask, type Scheduler, type Task, type TaskResult } from './scheduler.js';
import { fanInTarget, itemTarget } from './fan-out-targets.js';
import { StepStream } from './step-stream.js';
import { TrySpan, recordRunEnd } from '../telemetry/tracing.js';

/** Children inputs staged per transition (see RunStore.stageInputs). */
const STAGE_CHUNK = 1000;

/**
 * Children in flight at once when the fan-out sets no `concurrency`: the window of child records
 * and tasks that exist at a time, whatever the fan-out's size.
 */
const DEFAULT_WINDOW = 1000;

/**
 * Children started together in the default window (FanOutCommit.refill): one record-making
 * transition and one bulk add per this many children, rather than one each. A set `concurrency`
 * starts the next child as each ends (its cap is what the user asked to run at once).
 */
const DEFAULT_REFILL = 100;

/**
 * How often a duplicate child end may make this driver ensure its parent's children, in ms
 * (FanOutDriver `duplicate`): a safety net for an end whose follow-up was lost, not a hot path.
 */
const ENSURE_AFTER_DUPLICATE_MS = 5000;

/** What the fan-out driver needs from the step driver it works for. */
export interface FanOutHost {
  ensureProgress(run: StoredRun): Promise<void>;
  graphFor(run: Pick<StoredRun, 'id' | 'flow' | 'fingerprint'>): Promise<CompiledGraph | string>;
  checkpointOf(run: StoredRun): Promise<Checkpoint>;
  /** The flow control of one task (an item's try against its node's `limits`). */
  budgetGate(task: Task): StepBudgetPort & { woken(): Promise<boolean> };
}

const DONE: TaskResult = { type: 'done' };

/** The first step of a child run just made, as a caller that may run it itself sees it. */
export interface ChildStart {
  runId: string;
  target: StepTarget;
  priority?: number | undefined;
}

/**
 * A caller that runs the first child an end starts itself (a chain, StepDriverOptions.continueSteps),
 * in the slot of the child that ended, rather than adding its task: its commit names the worker
 * (CommitFields.takenBy) and makes the child (ChildEndReport.take).
 */
export interface ChildTaker {
  /**
   * The cancels its driver had seen (CheckpointCache.cancelsSeen) when the transition that may
   * make the child was sent: the child's record is remembered only if none came since.
   */
  readonly cancelsSeen: number;
  /** Whether it runs children with this first step (its queue). */
  runs(target: StepTarget): boolean;
  /** Takes the child, made and recorded as taken. */
  take(child: ChildStart): void;
}

/**
 * The fan-out side of the step driver (DESIGN "Fan-out"): starting children, running the items
 * of a ParallelBatchNode, reporting each child's end to its parent, and doing what that report
 * asks (start the next child, add the fan-in, cancel the siblings).
 */
export class FanOutDriver {
  private readonly cache: FanOutCache;
  /** When a duplicate child end last ensured a parent's children here, by `<parent>.<step>` (epoch ms). */
  private readonly ensuredAt = new Map<string, number>();

  constructor(
    private readonly store: RunStore,
    private readonly scheduler: Scheduler,
    private readonly options: { clock: Clock; maxCheckpointBytes: number },
    private readonly host: FanOutHost,
    private readonly values: LargeValues,
    /**
     * The host's remembered runs: a child this driver just made starts its first step from the
     * record, as the next step of a run the host committed does (no read; the commit's step
     * check guards it).
     */
    private readonly checkpoints: CheckpointCache,
  ) {
    this.cache = new FanOutCache(store, values);
  }

  /** The trace context of the step of `parentId` that fanned out at `step` (its children's spans join it). */
  async traceOf(parentId: string, step: number): Promise<string | undefined> {
    return (await this.cache.get(parentId, step))?.request.trace;
  }

  /** The `shared` parent `parentId` had when it fanned out at `step` (never mutate it). */
  async snapshotOf(parentId: string, step: number): Promise<JsonObject | undefined> {
    return (await this.cache.get(parentId, step))?.snapshot;
  }

  /**
   * Commits a fan-out step (the parent waits, holding no worker; child runs are created, each
   * with a delta against the snapshot stored once) and adds the first children. `claim` set apart
   * the large values of the parent's checkpoint and record; the snapshot's go with them.
   */
  async start(
    run: StoredRun,
    graph: CompiledGraph,
    checkpoint: Checkpoint,
    encoded: string,
    request: FanOutRequest,
    outbox: OutgoingMessage[],
    record: string | undefined,
    claim: ClaimCheck,
  ): Promise<void> {
    const total = request.kind === 'runs' ? request.params.length : request.items.length;
    const window = request.concurrency ?? DEFAULT_WINDOW;
    const startNow = Math.min(window, total);
    const snapshot = encodeShared(checkpoint.shared, Infinity, claim);
    const values = await this.values.claimOf(claim, run.checkpoint);
    let childTarget: StepTarget | undefined;
    // The children's inputs are staged a chunk at a time before the commit: no transition grows
    // with the fan-out; their run records are made as they start, a window at a time.
    for (let first = 0; first < total; first += STAGE_CHUNK) {
      const inputs: string[] = [];
      for (let index = first; index < Math.min(total, first + STAGE_CHUNK); index++) {
        if (request.kind === 'runs') {
          const start = childStart(graph, request, index);
          childTarget ??= start.target;
          inputs.push(encodeChildStart(start.frames));
        } else {
          inputs.push(encodeJson(request.items[index] ?? null));
        }
      }
      await this.store.stageInputs(run.id, run.step + 1, first, inputs);
    }
    const { result, wakes } = await this.store.fanOut(run, {
      checkpoint: encoded,
      target: { ...fanInTarget(request), node: request.kind === 'runs' ? request.flow : request.node },
      request: withoutPerChildData(request),
      snapshot,
      total,
      startNow,
      window,
      refill: request.concurrency === undefined ? DEFAULT_REFILL : 1,
      ...(childTarget ? { childTarget } : {}),
      outbox,
      now: this.options.clock.now(),
      ...(record === undefined ? {} : { record }),
      ...(values === undefined ? {} : { values }),
    });
    await this.scheduler.promote(wakes);
    if (result === 'stale') {
      const current = await this.store.load(run.id);
      if (current) await this.host.ensureProgress(current);
      return;
    }
    if (result !== 'committed') return;
    const basics = this.cache.remember(run.id, run.step + 1, {
      request: withoutPerChildData(request),
      snapshot: checkpoint.shared,
      flow: run.flow,
      fingerprint: run.fingerprint,
      ...(childTarget ? { childTarget } : {}),
    });
    const first = Array.from({ length: startNow }, (_, i) => i);
    await this.startChildren(run.id, run.step + 1, basics, first, request.kind === 'items' ? request.items : undefined);
  }

  /**
   * A waiting parent's children: re-add those started and not ended, or its fan-in. A child
   * counted as started whose record was never made (its starter died between recording the
   * end that started it and creating it) is started now.
   */
  async ensureChildren(run: StoredRun): Promise<void> {
    const fanOut = await this.store.fanOutOf(run.id);
    if (!fanOut || fanOut.step !== run.step) return;
    if (fanOut.ended >= fanOut.total)
      return this.scheduler.addStep(run.id, run.step, fanInTarget(fanOut.request), taskOptionsOf(run));
    const basics = await this.cache.get(run.id, run.step);
    if (!basics) return;
    const outcomes = await this.store.outcomesOf(run.id, fanOut.total);
    const pending = Array.from({ length: fanOut.started }, (_, i) => i).filter((i) => !outcomes[i]);
    if (fanOut.request.kind === 'items') return this.startChildren(run.id, run.step, basics, pending);
    const unmade: number[] = [];
    for (const index of pending) {
      const child = await this.store.load(childRunId(run.id, run.step, index));
      if (child) await this.host.ensureProgress(child);
      else unmade.push(index);
    }
    await this.startChildren(run.id, run.step, basics, unmade);
  }

  /**
   * How a child's end is reported to its parent, should this commit end it. With `taker`, the
   * next child is taken when the taker runs it (ChildEndReport.take).
   */
  async childReport(
    run: StoredRun,
    mode: CommitMode,
    fields: CommitFields,
    taker?: ChildTaker,
  ): Promise<ChildReport | undefined> {
    const parent = run.parent!;
    const fanOut = await this.cache.get(parent.id, parent.step);
    if (!fanOut) return undefined; // the parent's fan-out is gone: nobody waits for this child
    const take = fanOut.childTarget !== undefined && taker?.runs(fanOut.childTarget) === true;
    let outcome: ChildOutcome | undefined;
    if (mode === 'completed' && fields.checkpoint) {
      outcome = {
        status: 'completed',
        patch: deltaOf(fields.checkpoint) ?? [],
        ...(fields.lastAction === undefined ? {} : { lastAction: fields.lastAction }),
      };
    } else if (mode === 'failed' && fields.errorRecords?.length) {
      outcome = { status: 'failed', error: fields.errorRecords[fields.errorRecords.length - 1]! };
    }
    const values = outcome?.status === 'completed' ? fields.values?.refs : undefined;
    return {
      parent,
      ...(outcome ? { outcome } : {}),
      ...(values === undefined ? {} : { values }),
      failFast: fanOut.request.onItemError === 'fail-fast',
      parentError: childFailedError(fanOut.request, parent.index, fields.errorRecords?.at(-1)),
      now: fields.now,
      ...(take ? { take } : {}),
    };
  }

  /**
   * Does what recording a child's end asked for: start the next children, resume, or cancel. A
   * child the commit made for `taker` (ChildEndedResult `made`) goes to it.
   */
  async followChildEnded(
    parentId: string,
    parentStep: number,
    result: ChildEndedResult,
    taker?: ChildTaker,
  ): Promise<void> {
    switch (result.type) {
      case 'recorded': {
        const { start, made } = result;
        if (start === undefined) return;
        const fanOut = await this.cache.get(parentId, parentStep);
        let indices = Array.from({ length: start.count }, (_, i) => start.first + i);
        if (made && fanOut?.childTarget && taker) {
          this.checkpoints.remember(made, taker.cancelsSeen);
          taker.take({ runId: made.id, target: fanOut.childTarget, priority: fanOut.request.priority });
          indices = indices.slice(1);
        }
        if (fanOut) await this.startChildren(parentId, parentStep, fanOut, indices);
        return;
      }
      case 'fan-in': {
        const request = (await this.cache.get(parentId, parentStep))?.request;
        return this.scheduler.addStep(parentId, parentStep, fanInTarget(request), taskOptionsOf(request ?? {}));
      }
      case 'parent-ended': {
        await cancelChildren(this.store, this.scheduler, parentId, parentStep);
        // The parent ended inside the transition (failed fast, or cancelled): if it is a child
        // itself, its own parent hears of it now.
        const parent = await this.store.load(parentId);
        if (parent) {
          const trace =
            parent.trace ?? (parent.parent ? await this.traceOf(parent.parent.id, parent.parent.step) : undefined);
          recordRunEnd(
            { ...parent, trace },
            parent.status,
            parent.finishedAt ?? this.options.clock.now(),
            parent.error,
          );
        }
        if (parent?.parent) await this.reportEnded(parent);
        return;
      }
      case 'duplicate': {
        // A child that ran twice (a redelivery, a worker taken over while it lived): what its
        // end started may have been lost with a dead worker, so the parent's children are
        // ensured, at most once per ENSURE_AFTER_DUPLICATE_MS here. Each time reads every
        // outcome and every pending child: after a takeover, duplicates come by the hundred,
        // and ensuring each one's parent swamped the workers (reliability-under-load issue).
        if (!this.ensureDue(parentId, parentStep)) return;
        const parent = await this.store.load(parentId);
        if (parent) await this.host.ensureProgress(parent);
        return;
      }
      case 'ignored':
        return;
    }
  }

  /** Whether a duplicate end of a child of `parentId` at `parentStep` may ensure its siblings now. */
  private ensureDue(parentId: string, parentStep: number): boolean {
    const key = `${parentId}.${parentStep}`;
    const now = this.options.clock.now();
    if (now - (this.ensuredAt.get(key) ?? -Infinity) < ENSURE_AFTER_DUPLICATE_MS) return false;
    this.ensuredAt.delete(key);
    this.ensuredAt.set(key, now);
    if (this.ensuredAt.size > 1000) this.ensuredAt.delete(this.ensuredAt.keys().next().value!);
    return true;
  }

  /** Adds the first task of the children at `indices` (idempotent: deterministic task ids). */
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
          item: items ? (items[index] ?? null) : ((await this.store.itemOf(parentId, parentStep, index)) ?? null),
        })),
      );
      return this.scheduler.addItems(parentId, parentStep, inputs, itemTarget(request), taskOptionsOf(request));
    }
    const target = fanOut.childTarget;
    if (!target || indices.length === 0) return;
    const cancelsSeen = this.checkpoints.cancelsSeen; // before the transition reads the records
    for (const made of await this.store.createChildren(parentId, parentStep, indices))
      this.checkpoints.remember(made, cancelsSeen);
    await this.scheduler.addFirstSteps(
      indices.map((index) => childRunId(parentId, parentStep, index)),
      target,
      taskOptionsOf(request),
    );
  }

  /** Runs one try of one item of a ParallelBatchNode fan-out, with the node's retry policy. */
  async runItem(task: ItemTask, attemptsMade: number): Promise<TaskResult> {
    const { runId, step, index } = task;
    // A cheap check first: the items of a parent that has ended (failed fast, cancelled) stop.
    const parent = await this.store.position(runId);
    if (parent?.status !== 'waiting' || parent.step !== step) return DONE;
    const fanOut = await this.cache.get(runId, step);
    if (fanOut?.request.kind !== 'items') return DONE;
    const { request } = fanOut;
    const graph = await this.host.graphFor({ id: runId, flow: fanOut.flow, fingerprint: fanOut.fingerprint });
    if (typeof graph === 'string') return { type: 'defer', delayMs: 5000, reason: graph };
    const now = (): number => this.options.clock.now();
    const stream = new StepStream(this.store, runId, { step, attempt: attemptsMade, item: index }, now);
    const gate = this.host.budgetGate(task);
    const ctx: StepContext = {
      attempt: attemptsMade,
      signal: new AbortController().signal,
      run: { runId, flow: fanOut.flow, step },
      emitter: stream,
      now,
      budget: gate,
    };
    const span = new TrySpan({
      runId,
      flow: fanOut.flow,
      node: request.node,
      step,
      attempt: attemptsMade,
      item: index,
      parent: request.trace,
    });
    let outcome: ItemTryOutcome | undefined;
    try {
      outcome = await span.run(() => executeItem(graph, request.node, request.params, task.item, ctx));
      await stream.flush();
    } finally {
      span.end(
        outcome?.type ?? 'failed',
        outcome?.type === 'failed' || outcome?.type === 'retry' ? outcome.error : undefined,
      );
    }
    const rescued = outcome.type === 'failed' ? outcome.errors.filter((e) => e !== outcome.error) : outcome.errors;
    await this.store.appendErrors(runId, rescued);
    if (outcome.type === 'retry') return { type: 'retry', delayMs: outcome.delayMs, error: outcome.error };
    if (outcome.type === 'throttled') {
      // No budget for this item: it waits in the delayed set, holding no slot, using no try.
      return {
        type: 'defer',
        delayMs: outcome.delayMs,
        reason: `item ${index} of run '${runId}' waits for budget '${outcome.key}'`,
        woken: () => gate.woken(),
      };
    }
    await this.itemEnded(
      runId,
      step,
      index,
      outcome.type === 'completed'
        ? { status: 'completed', ...(outcome.value === undefined ? {} : { value: outcome.value }) }
        : { status: 'failed', error: outcome.error },
    );
    return DONE;
  }

  /** Records an item's end on its parent and does what that asks for. */
  async itemEnded(parentId: string, parentStep: number, index: number, outcome: ChildOutcome): Promise<void> {
    const fanOut = await this.cache.get(parentId, parentStep);
    if (!fanOut) return;
    await this.recordEnd(parentId, parentStep, index, fanOut.request, outcome);
  }

  /** An ended child whose parent may not have heard of it (a redelivery): report it again. */
  async reportEnded(run: StoredRun): Promise<void> {
    if (!run.parent) return;
    const fanOut = await this.cache.get(run.parent.id, run.parent.step);
    if (!fanOut) return;
    let outcome: ChildOutcome;
    let values: string[] | undefined;
    if (run.status === 'completed') {
      values = [...(await this.values.closure(run.checkpoint).catch(() => new Set<string>()))];
      outcome = {
        status: 'completed',
        patch: deltaOf(run.checkpoint) ?? [],
        ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
      };
    } else if (run.status === 'failed') {
      outcome = { status: 'failed', error: recordOfRunError(run.error) };
    } else {
      outcome = { status: 'cancelled' };
    }
    await this.recordEnd(run.parent.id, run.parent.step, run.parent.index, fanOut.request, outcome, values);
  }

  /** `values`: the hashes the outcome references, claimed for the parent (see ChildEndReport). */
  private async recordEnd(
    parentId: string,
    parentStep: number,
    index: number,
    request: FanOutRequest,
    outcome: ChildOutcome,
    values?: string[],
  ): Promise<void> {
    const result = await this.store.childEnded(parentId, parentStep, index, {
      outcome,
      ...(values?.length ? { values } : {}),
      failFast: request.onItemError === 'fail-fast',
      parentError: childFailedError(request, index, outcome.status === 'failed' ? outcome.error : undefined),
      now: this.options.clock.now(),
    });
    await this.followChildEnded(parentId, parentStep, result);
  }
}

/** The request as stored on the parent: without the per-child data (params, items). */
function withoutPerChildData(request: FanOutRequest): FanOutRequest {
  return request.kind === 'runs' ? { ...request, params: [] } : { ...request, items: [] };
}
