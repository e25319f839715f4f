import { newRunId } from './run-id.js';
import { checkOptionalPositiveInteger } from '../core/validate-options.js';
import { recordOfRunError, type ErrorRecord } from '../errors/error-record.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Checkpoint } from './checkpoint.js';
import { systemClock, type Clock } from './clock.js';
import type {
  Engine,
  FinalRunStatus,
  ListRunsOptions,
  RunError,
  RunHandle,
  RunInfo,
  RunOptions,
  RunResult,
} from './engine.js';
import { executeItem, resumeFanOut, walkCheckpoint, type ChildOutcome, type FanOutRequest } from './fan-out.js';
import { FlowRegistry, type FlowDefinition, type FlowsOption } from './flow-definition.js';
import type { CompiledGraph } from './graph.js';
import type { Json, JsonObject } from './json.js';
import { LocalMailboxes } from './local-mailboxes.js';
import { diffShared } from './merge-patches.js';
import { checkRunInput, encodeCheckpoint, runErrorOf } from './run-input.js';
import { executeStep, type StepOutcome, type StepTarget } from './step-interpreter.js';
import { initialCheckpoint } from './walk.js';
import { infoOf, isFinal, resultOf, type LocalRun } from './local-run.js';
import { TaskQueue } from './task-queue.js';

export interface LocalEngineOptions {
  /** The flows this engine runs: definitions from `defineFlow`, or a module exporting them. */
  flows: FlowsOption;
  /** Most steps running at once in this process. @defaultValue 16 */
  concurrency?: number;
  /** Finished runs kept for `get`, oldest dropped first. @defaultValue 10000 */
  retainFinishedRuns?: number;
  /** Largest serialized checkpoint, in bytes. @defaultValue 16 MiB */
  maxCheckpointBytes?: number;
  /** Time source for retry delays; tests inject a fake one. @defaultValue the system clock */
  clock?: Clock;
}

type Task =
  | { type: 'step'; runId: string; step: number }
  | { type: 'fan-in'; runId: string; step: number }
  | { type: 'item'; runId: string; step: number; index: number; attempt: number };

const MAX_ERRORS_KEPT = 50;

/**
 * The embedded engine: runs registered flows step by step in this process, with the same step
 * interpreter, checkpoints and fan-out as the Redis engine, and an in-memory store. Every
 * checkpoint goes through JSON, so what works here survives the Redis engine too.
 *
 * @example
 * ```ts
 * const engine = new LocalEngine({ flows: [review] });
 * const result = await engine.run('review', { draft: '...' });
 * if (result.status === 'completed') console.log(result.lastAction, result.shared);
 * ```
 */
export class LocalEngine implements Engine {
  private readonly registry: FlowRegistry;
  private readonly runs = new Map<string, LocalRun>();
  private readonly finished: string[] = [];
  private readonly tasks: TaskQueue<Task>;
  private readonly clock: Clock;
  private readonly retainFinishedRuns: number;
  private readonly maxCheckpointBytes: number;
  private readonly mailboxes: LocalMailboxes;
  private closed = false;

  constructor(options: LocalEngineOptions) {
    this.registry = new FlowRegistry(options.flows);
    this.clock = options.clock ?? systemClock;
    this.retainFinishedRuns =
      checkOptionalPositiveInteger('LocalEngine', 'retainFinishedRuns', options.retainFinishedRuns) ?? 10_000;
    this.maxCheckpointBytes =
      checkOptionalPositiveInteger('LocalEngine', 'maxCheckpointBytes', options.maxCheckpointBytes) ?? 16 * 1024 * 1024;
    const concurrency = checkOptionalPositiveInteger('LocalEngine', 'concurrency', options.concurrency) ?? 16;
    this.tasks = new TaskQueue(concurrency, this.clock, (task) => this.runTask(task));
    this.mailboxes = new LocalMailboxes(this.clock, (runId) => {
      const run = this.runs.get(runId);
      if (run && run.status === 'waiting' && !run.fanOut) {
        run.status = 'running';
        this.tasks.push({ type: 'step', runId, step: run.step });
      }
    });
  }

  /**
   * Sends `body` to the mailbox at `address` from outside any run (a person or a service
   * answering an agent); wakes a run parked on it.
   *
   * @throws QueueflowError NOT_JSON for a body that would not survive JSON; TypeError for a bad address.
   */
  async send(address: string, body: Json): Promise<void> {
    this.assertOpen();
    this.mailboxes.send(address, body);
  }

  async run<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options?: RunOptions,
  ): Promise<RunResult<S>> {
    const handle = await this.start(flow, shared, options);
    return handle.result();
  }

  async start<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options: RunOptions = {},
  ): Promise<RunHandle<S>> {
    this.assertOpen();
    const graph = this.registry.graph(flow);
    const input = checkRunInput(shared, options.params);
    const { checkpoint, target } = initialCheckpoint(graph, input.shared, input.params);
    const run = this.createRun(graph, checkpoint, target);
    this.tasks.push({ type: 'step', runId: run.id, step: 0 });
    return { id: run.id, result: () => this.result(run.id) as Promise<RunResult<S>> };
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    const run = this.runs.get(runId);
    return run && infoOf(run);
  }

  async list(options: ListRunsOptions = {}): Promise<RunInfo[]> {
    const limit = options.limit ?? 100;
    const found: RunInfo[] = [];
    for (const run of [...this.runs.values()].reverse()) {
      if (found.length >= limit) break;
      if (run.parent) continue; // fan-out children are seen through their parent
      if (options.status && run.status !== options.status) continue;
      if (options.flow && run.flow !== options.flow) continue;
      found.push(infoOf(run));
    }
    return found;
  }

  async cancel(runId: string): Promise<void> {
    const run = this.runs.get(runId);
    if (!run) throw new QueueflowError('RUN_NOT_FOUND', `no run '${runId}' in this engine`);
    this.requestCancel(run);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tasks.close();
    for (const run of this.runs.values()) run.abort.abort(new QueueflowError('ENGINE_CLOSED', 'the engine was closed'));
  }

  private assertOpen(): void {
    if (this.closed) throw new QueueflowError('ENGINE_CLOSED', 'LocalEngine is closed');
  }

  private createRun(
    graph: CompiledGraph,
    checkpoint: Checkpoint,
    target: StepTarget,
    parent?: LocalRun['parent'],
  ): LocalRun {
    const now = this.clock.now();
    const run: LocalRun = {
      // A fan-out child is named as on RedisEngine (fan-out.lua): `<parent id>.<parent step>.<index>`.
      id: parent ? `${parent.id}.${parent.step}.${parent.index}` : newRunId(),
      flow: graph.flowName,
      graph,
      status: 'queued',
      checkpoint: encodeCheckpoint(checkpoint, this.maxCheckpointBytes),
      target,
      step: 0,
      attempt: 0,
      cancelRequested: false,
      abort: new AbortController(),
      createdAt: now,
      updatedAt: now,
      errors: [],
      conflicts: [],
      waiters: [],
      ...(parent ? { parent } : {}),
    };
    this.runs.set(run.id, run);
    return run;
  }

  /** Resolves when run `runId` has ended. @throws QueueflowError RUN_NOT_FOUND for an unknown id. */
  result(runId: string): Promise<RunResult> {
    const run = this.runs.get(runId);
    if (!run) return Promise.reject(new QueueflowError('RUN_NOT_FOUND', `no run '${runId}' in this engine`));
    if (isFinal(run.status)) return Promise.resolve(resultOf(run));
    return new Promise((resolve) => run.waiters.push(resolve));
  }

  private async runTask(task: Task): Promise<void> {
    const run = this.runs.get(task.runId);
    if (!run || isFinal(run.status) || run.step !== task.step) return;
    if (task.type === 'item') return this.runItem(run, task);
    if (run.cancelRequested) return this.finish(run, 'cancelled');
    run.status = 'running';
    run.startedAt ??= this.clock.now();
    const checkpoint = JSON.parse(run.checkpoint) as Checkpoint;
    const ctx = {
      attempt: run.attempt,
      fanOut: true,
      signal: run.abort.signal,
      runtime: { runId: run.id, flowName: run.flow },
      mailbox: this.mailboxes.stepMailbox(run.id, run.step),
    };
    if (task.type === 'fan-in') {
      const outcomes = run.fanOut!.outcomes as ChildOutcome[];
      const resumed = await resumeFanOut(run.graph, checkpoint, outcomes, ctx);
      run.conflicts.push(...resumed.conflicts);
      delete run.fanOut;
      return this.apply(run, resumed.outcome);
    }
    this.apply(run, await executeStep(run.graph, checkpoint, ctx));
  }

  /** Commits what a step did and schedules what follows. */
  private apply(run: LocalRun, outcome: StepOutcome): void {
    if (isFinal(run.status)) return;
    if (run.cancelRequested) return this.finish(run, 'cancelled');
    run.updatedAt = this.clock.now();
    for (const error of outcome.errors) this.recordError(run, error);
    if (outcome.type === 'park') {
      run.status = 'waiting';
      return this.mailboxes.park(run.id, outcome.park, outcome.replay, outcome.outbox);
    }
    if (outcome.type === 'failed') {
      if (!outcome.errors.includes(outcome.error)) this.recordError(run, outcome.error);
      if (outcome.error.attempt !== undefined) run.attempt = outcome.error.attempt + 1;
      return this.finish(run, 'failed', runErrorOf(outcome.error));
    }
    try {
      run.checkpoint = encodeCheckpoint(outcome.checkpoint, this.maxCheckpointBytes);
    } catch (error) {
      return this.finish(run, 'failed', runErrorOf(error));
    }
    if (outcome.type !== 'retry') this.mailboxes.committed(run.id, outcome.outbox);
    switch (outcome.type) {
      case 'next':
        run.step++;
        run.attempt = 0;
        run.target = outcome.target;
        return this.tasks.push({ type: 'step', runId: run.id, step: run.step });
      case 'retry':
        run.attempt++;
        run.target = outcome.target;
        return this.tasks.push({ type: 'step', runId: run.id, step: run.step }, outcome.delayMs);
      case 'completed':
        run.step++;
        if (outcome.lastAction !== undefined) run.lastAction = outcome.lastAction;
        return this.finish(run, 'completed');
      case 'fan-out':
        run.step++;
        run.attempt = 0;
        run.status = 'waiting';
        run.target = {
          node: outcome.fanOut.kind === 'walks' ? outcome.fanOut.flow : outcome.fanOut.node,
          maxAttempts: 1,
        };
        return this.fanOut(run, outcome.fanOut, outcome.checkpoint);
    }
  }

  private fanOut(run: LocalRun, request: FanOutRequest, checkpoint: Checkpoint): void {
    const total = request.kind === 'walks' ? request.params.length : request.items.length;
    run.fanOut = {
      request,
      snapshot: JSON.stringify(checkpoint.shared),
      outcomes: new Array<ChildOutcome | undefined>(total),
      childIds: new Array<string | undefined>(total),
      started: 0,
      ended: 0,
      failed: 0,
    };
    const lanes = Math.min(request.concurrency ?? total, total);
    for (let i = 0; i < lanes; i++) this.startChild(run);
  }

  private startChild(parent: LocalRun): void {
    const fanOut = parent.fanOut!;
    const index = fanOut.started++;
    if (fanOut.request.kind === 'items') {
      return this.tasks.push({ type: 'item', runId: parent.id, step: parent.step, index, attempt: 0 });
    }
    const snapshot = JSON.parse(fanOut.snapshot) as JsonObject;
    const { checkpoint, target } = walkCheckpoint(parent.graph, fanOut.request, index, snapshot);
    const child = this.createRun(parent.graph, checkpoint, target, { id: parent.id, step: parent.step, index });
    fanOut.childIds[index] = child.id;
    this.tasks.push({ type: 'step', runId: child.id, step: 0 });
  }

  private async runItem(parent: LocalRun, task: Extract<Task, { type: 'item' }>): Promise<void> {
    const request = parent.fanOut?.request;
    if (request?.kind !== 'items' || parent.cancelRequested) return;
    const ctx = {
      attempt: task.attempt,
      fanOut: true,
      signal: parent.abort.signal,
      runtime: { runId: parent.id, flowName: parent.flow },
    };
    const outcome = await executeItem(parent.graph, request.node, request.params, request.items[task.index]!, ctx);
    if (isFinal(parent.status) || parent.step !== task.step) return;
    for (const error of outcome.errors) this.recordError(parent, error);
    if (outcome.type === 'retry') return this.tasks.push({ ...task, attempt: task.attempt + 1 }, outcome.delayMs);
    if (outcome.type === 'failed' && !outcome.errors.includes(outcome.error)) this.recordError(parent, outcome.error);
    this.childEnded(
      parent,
      task.index,
      outcome.type === 'completed'
        ? { status: 'completed', ...(outcome.value === undefined ? {} : { value: outcome.value }) }
        : { status: 'failed', error: outcome.error },
    );
  }

  /** A child ended: fail fast, start the next one, or resume the parent after the last. */
  private childEnded(parent: LocalRun, index: number, outcome: ChildOutcome): void {
    const fanOut = parent.fanOut;
    if (!fanOut || isFinal(parent.status) || fanOut.outcomes[index]) return;
    fanOut.outcomes[index] = outcome;
    fanOut.ended++;
    if (outcome.status !== 'completed') {
      fanOut.failed++;
      if (fanOut.request.onItemError === 'fail-fast') {
        const why = outcome.status === 'failed' ? outcome.error.message : 'it was cancelled';
        const error: RunError = {
          name: 'QueueflowError',
          code: 'CHILD_FAILED',
          message: `child ${index} of '${'flow' in fanOut.request ? fanOut.request.flow : fanOut.request.node}' failed: ${why}`,
          ...(outcome.status === 'failed' && outcome.error.node ? { node: outcome.error.node } : {}),
          ...(outcome.status === 'failed' && outcome.error.attempt !== undefined
            ? { attempts: outcome.error.attempt + 1 }
            : {}),
        };
        return this.finish(parent, 'failed', error);
      }
    }
    const total = fanOut.outcomes.length;
    if (fanOut.started < total) this.startChild(parent);
    if (fanOut.ended === total) this.tasks.push({ type: 'fan-in', runId: parent.id, step: parent.step });
  }

  /**
   * Cancels now: the run ends `cancelled`, the `exec` in flight is aborted, and the step in
   * flight commits nothing (it stops at that step boundary).
   */
  private requestCancel(run: LocalRun): void {
    if (isFinal(run.status)) return;
    run.cancelRequested = true;
    run.abort.abort(new QueueflowError('RUN_CANCELLED', `run '${run.id}' was cancelled`));
    this.finish(run, 'cancelled');
  }

  private finish(run: LocalRun, status: FinalRunStatus, error?: RunError): void {
    if (isFinal(run.status)) return;
    if (status === 'completed') this.mailboxes.forget(run.id);
    else this.mailboxes.release(run.id);
    run.status = status;
    run.finishedAt = run.updatedAt = this.clock.now();
    if (error) run.error = error;
    if (run.fanOut) {
      for (const childId of run.fanOut.childIds) {
        const child = childId ? this.runs.get(childId) : undefined;
        if (child) this.requestCancel(child);
      }
    }
    const result = resultOf(run);
    for (const resolve of run.waiters.splice(0)) resolve(result);
    this.retain(run.id);
    if (run.parent) {
      const parent = this.runs.get(run.parent.id);
      if (parent) this.childEnded(parent, run.parent.index, this.childOutcome(parent, run, result));
    }
  }

  private childOutcome(parent: LocalRun, child: LocalRun, result: RunResult): ChildOutcome {
    if (result.status === 'cancelled') return { status: 'cancelled' };
    if (result.status === 'failed') return { status: 'failed', error: recordOfRunError(child.error) };
    const snapshot = JSON.parse(parent.fanOut?.snapshot ?? '{}') as JsonObject;
    return {
      status: 'completed',
      patch: diffShared(snapshot, result.shared),
      ...(result.lastAction === undefined ? {} : { lastAction: result.lastAction }),
    };
  }

  private recordError(run: LocalRun, error: ErrorRecord): void {
    run.errors.push(error);
    if (run.errors.length > MAX_ERRORS_KEPT) run.errors.splice(0, run.errors.length - MAX_ERRORS_KEPT);
  }

  private retain(runId: string): void {
    this.finished.push(runId);
    while (this.finished.length > this.retainFinishedRuns) this.runs.delete(this.finished.shift()!);
  }
}
