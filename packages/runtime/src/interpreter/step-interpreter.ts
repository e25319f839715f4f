import { visitCopy, type BaseNode } from '../core/base-node.js';
import { toParamList } from '../core/batch-flow.js';
import { toItems } from '../core/batch-node.js';
import type { Flow } from '../core/flow.js';
import { asError, type Node } from '../core/node.js';
import { attachVisit } from '../core/run-context.js';
import { toErrorRecord, type ErrorRecord } from '../errors/error-record.js';
import { QueueflowError, retryAfterOf } from '../errors/queueflow-error.js';
import { attachBudget } from '../core/budget-of.js';
import { limitApplies, limitCostOf, limitKeyOf } from '../core/limit.js';
import type { BudgetLimit } from '../kernel/budget-store.js';
import { assertJson, type Json, type JsonObject } from '../json/json.js';
import { attachMailbox } from '../mailbox/mailbox-of.js';
import { noMailbox } from '../mailbox/no-mailbox.js';
import { attachEmitter } from '../stream/emitter-of.js';
import type { Checkpoint, Frame } from './checkpoint.js';
import { fanOutPolicy, graphNode, isLeaf, leafTarget, type CompiledGraph, type GraphNode } from './graph.js';
import type { StepContext, StepOutcome, StepResult } from './step-types.js';
import { advancePast, checkPosition, walkParams } from './walk.js';

/**
 * The resumable step interpreter: given a run's checkpoint, takes one step (one node visit, plus
 * the flow boundaries around it) and says what happens next. It decides *what* happens; the
 * engine decides where the checkpoint lives and who runs the next step.
 */

/** Most flow boundaries one step may cross without visiting a node (guards empty loops). */
const MAX_BOUNDARIES_PER_STEP = 10_000;

/** Whether a step that ended with `result` commits what its code did (not retried, failed or parked). */
function committing(result: StepResult): boolean {
  return result.type === 'next' || result.type === 'completed' || result.type === 'fan-out';
}

/** Takes one step of the run whose state is `checkpoint`. Never throws for user-code errors. */
export async function executeStep(
  graph: CompiledGraph,
  checkpoint: Checkpoint,
  ctx: StepContext,
): Promise<StepOutcome> {
  const step = new Step(graph, checkpoint, ctx);
  return step.guard(async () => {
    checkPosition(graph, checkpoint, ctx.run?.runId);
    const top = step.top();
    if (top.node !== undefined && isLeaf(graphNode(graph, top.node).kind)) return step.visitLeaf(top);
    return step.settle();
  });
}

/** Shared by the interpreter's entry points (executeStep, executeItem, resumeFanOut); one instance per step. */
export class Step {
  /** The node whose code is running, for error records. */
  current: string | undefined;
  /** 0-based index of the last try of `exec`, when the step failed after it. */
  failedAttempt: number | undefined;
  /** Failed tries of `exec` in this step, and the error object each came from. */
  readonly failedTries: ErrorRecord[] = [];
  /** The node whose visit this step ended, and the action it returned. */
  visited: { node: string; action: string | undefined } | undefined;
  private lastTryError: unknown;

  constructor(
    readonly graph: CompiledGraph,
    readonly checkpoint: Checkpoint,
    readonly ctx: StepContext,
  ) {}

  top(): Frame {
    const top = this.checkpoint.frames[this.checkpoint.frames.length - 1];
    if (!top) throw new QueueflowError('INTERNAL', 'the run has already ended: no frame to step');
    return top;
  }

  /** Runs `body`; a thrown error fails the run with a record naming the node. */
  async guard(body: () => Promise<StepResult>): Promise<StepOutcome> {
    let result: StepResult;
    try {
      result = await body();
    } catch (error) {
      result = this.failed(error);
    }
    const mailbox = this.ctx.mailbox;
    // A receive that parked wins over what the code made of its signal (even if it caught it).
    if (mailbox?.parkRequest) {
      result = {
        type: 'park',
        checkpoint: this.checkpoint,
        park: mailbox.parkRequest,
        replay: mailbox.replayAfterPark(),
      };
    } else if (mailbox?.handedOff && result.type === 'next') {
      // The turn handed its message on: it ends here, whatever successor the action named.
      const lastAction = this.visited?.action;
      result.checkpoint.frames = [];
      if (lastAction === undefined) delete result.checkpoint.lastAction;
      else result.checkpoint.lastAction = lastAction;
      result = { type: 'completed', checkpoint: result.checkpoint, lastAction };
    }
    // The step's code is done and it commits next: its shared-memory updates are written now
    // (each once, by id), and what it received in conversations recorded; a conflict fails the
    // step. A try of `exec` to be retried keeps what `prep` and the tries before it staged in
    // the checkpoint, for the step that runs it again.
    if (!mailbox?.parkRequest && mailbox?.beforeCommit && committing(result)) {
      try {
        await mailbox.beforeCommit();
      } catch (error) {
        result = this.failed(error);
      }
    } else if (mailbox?.parkRequest) {
      // Its sends leave with the park: what it received before them is recorded first.
      await mailbox.recordReceipts?.();
    } else if (result.type === 'retry' || result.type === 'throttled') {
      const staged = mailbox?.stagedMemory?.();
      const visit = result.checkpoint.frames.at(-1)?.visit;
      if (staged !== undefined && visit) visit.memory = staged;
    }
    return {
      ...result,
      errors: this.failedTries,
      outbox: mailbox?.outbox ?? [],
      ...(mailbox?.reminders?.length && result.type !== 'park' ? { reminders: mailbox.reminders } : {}),
      ...(this.visited ? { visited: this.visited } : {}),
    };
  }

  failed(error: unknown, extra: Partial<ErrorRecord> = {}): StepResult {
    // The last try's error, rethrown by execFallback as it is, or as the Error `asError` made of
    // something else thrown: already recorded with that try.
    const rethrown =
      error === this.lastTryError ||
      (!(this.lastTryError instanceof Error) && error instanceof Error && error.cause === this.lastTryError);
    if (rethrown && this.failedTries.length > 0) {
      return { type: 'failed', checkpoint: this.checkpoint, error: this.failedTries[this.failedTries.length - 1]! };
    }
    const record = toErrorRecord(error, {
      node: this.current,
      at: this.ctx.now(),
      ...(this.failedAttempt === undefined ? {} : { attempt: this.failedAttempt }),
      ...extra,
    });
    return { type: 'failed', checkpoint: this.checkpoint, error: record };
  }

  /** A fresh per-visit copy of `node`'s template with `params` (rule S6). */
  copyOf<T extends BaseNode<any, any>>(node: GraphNode, params: JsonObject): T {
    const copy = visitCopy(node.template, params) as T;
    if (this.ctx.run) attachVisit(copy, this.ctx.run);
    attachMailbox(copy, this.ctx.mailbox ?? noMailbox);
    if (this.ctx.emitter) attachEmitter(copy, { port: this.ctx.emitter, node: node.id });
    this.current = node.id;
    return copy;
  }

  /** One visit of the leaf at `frame.node`: prep (once), exec with this step's attempt, post. */
  async visitLeaf(frame: Frame): Promise<StepResult> {
    const node = graphNode(this.graph, frame.node!);
    const copy = this.copyOf<Node<any, any>>(node, walkParams(frame));
    const shared = this.checkpoint.shared;
    if (!frame.visit) {
      const prepRes = await copy.prep(shared);
      assertResult(prepRes, `prep result of '${node.id}'`);
      assertJson(shared, 'shared');
      frame.visit = prepRes === undefined ? {} : { prepRes: prepRes as Json };
    } else if (frame.visit.memory !== undefined) {
      this.ctx.mailbox?.restoreMemory?.(frame.visit.memory);
      delete frame.visit.memory;
    }
    const prepRes = frame.visit.prepRes;
    let execRes: unknown;
    if (node.kind === 'node') {
      const tried = await this.tryExec(copy, node, prepRes, this.ctx.attempt);
      if (tried.retry) return tried.retry;
      execRes = tried.value;
    } else if (node.kind === 'batch-node') {
      const items = toItems(copy, prepRes);
      const results = frame.visit.results ?? [];
      frame.visit.results = results;
      for (let attempt = this.ctx.attempt; results.length < items.length; attempt = 0) {
        const tried = await this.tryExec(copy, node, items[results.length], attempt, ` item ${results.length}`);
        if (tried.retry) return tried.retry;
        results.push(tried.value as Json);
        // An item that needed retries used up this step's attempt count: the next item gets a
        // fresh step, so that every item counts its own tries.
        if (attempt > 0 && results.length < items.length) {
          return {
            type: 'next',
            checkpoint: this.checkpoint,
            target: leafTarget(node),
          };
        }
      }
      execRes = results;
    } else {
      const items = toItems(copy, prepRes);
      if (items.length > 0) {
        frame.visit.fannedOut = true;
        const { concurrency, onItemError } = fanOutPolicy(node);
        return {
          type: 'fan-out',
          checkpoint: this.checkpoint,
          fanOut: {
            kind: 'items',
            node: node.id,
            params: walkParams(frame),
            items: items as Json[],
            concurrency,
            onItemError,
            maxAttempts: node.maxAttempts,
            ...(node.queue === undefined ? {} : { queue: node.queue }),
          },
        };
      }
      execRes = []; // an empty batch: `post` still runs (rule S8)
    }
    this.ctx.signal?.throwIfAborted();
    const action = await copy.post(shared, prepRes, execRes);
    assertJson(shared, 'shared');
    return this.finishNode(frame, action ?? undefined);
  }

  /**
   * One try of `exec` on `input` (rules S2, S3): a failed try that may be retried returns a
   * `retry` outcome; the last failed try runs `execFallback`.
   */
  async tryExec(
    copy: Node<any, any>,
    node: GraphNode,
    input: unknown,
    attempt: number,
    label = '',
  ): Promise<{ value: unknown; retry?: undefined } | { value?: undefined; retry: StepResult }> {
    const target = leafTarget(node);
    const budget = this.ctx.budget;
    const resolved = budget && copy.limits?.length ? resolveLimits(copy, node.id, input) : undefined;
    const limits = resolved?.length ? resolved : undefined;
    if (limits) {
      const admission = await budget!.admit(node.id, limits);
      if (!admission.admitted) {
        const throttled: StepResult = { type: 'throttled', checkpoint: this.checkpoint, target, ...admission };
        return { retry: throttled };
      }
      attachBudget(copy, { port: budget!, keys: limits.map((limit) => limit.key) });
    }
    let value: unknown;
    const mark = this.ctx.mailbox?.tryStarted?.();
    try {
      try {
        value = await copy._tryExec(input, attempt, this.ctx.signal);
      } finally {
        if (limits) await budget!.release(); // concurrency is per try of exec
      }
    } catch (error) {
      if (this.ctx.mailbox?.parkRequest) throw error; // parking, not a failed try
      if (mark !== undefined) this.ctx.mailbox?.tryFailed?.(mark);
      const retryAfterMs = retryAfterOf(error);
      if (retryAfterMs !== undefined && budget && !this.ctx.signal?.aborted) {
        // A RateLimitedError: hold the node's keys back for everyone, wait, use no try.
        const keys = limits?.map((limit) => limit.key) ?? [];
        await budget.hold(keys, retryAfterMs);
        const throttled: StepResult = {
          type: 'throttled',
          checkpoint: this.checkpoint,
          target,
          key: keys[0] ?? '',
          delayMs: retryAfterMs,
        };
        return { retry: throttled };
      }
      const record = toErrorRecord(error, { node: node.id, attempt, at: this.ctx.now() });
      this.failedTries.push(record);
      this.lastTryError = error;
      if (attempt < node.maxAttempts - 1 && record.retryable && !this.ctx.signal?.aborted) {
        const retry: StepResult = {
          type: 'retry',
          checkpoint: this.checkpoint,
          target,
          error: record,
          delayMs: copy.retryDelayMs(attempt),
        };
        return { retry };
      }
      try {
        value = await copy.execFallback(input, asError(error));
      } catch (fallbackError) {
        this.failedAttempt = attempt;
        throw fallbackError;
      }
    }
    assertResult(value, `exec result of '${node.id}'${label}`);
    return { value };
  }

  /** The visit of `frame.node` ended with `action`: move past it and settle. */
  finishNode(frame: Frame, action: string | undefined): Promise<StepResult> {
    this.visited = { node: frame.node!, action };
    advancePast(this.graph, frame, action);
    return this.settle();
  }

  /**
   * Walks flow boundaries (entering flows, running their `prep`; leaving them, running their
   * `post`) until the walk stands at a leaf to visit, waits on a fan-out, or the run ends.
   */
  async settle(): Promise<StepResult> {
    for (let crossed = 0; crossed < MAX_BOUNDARIES_PER_STEP; crossed++) {
      const top = this.top();
      if (top.node !== undefined) {
        const node = graphNode(this.graph, top.node);
        if (isLeaf(node.kind)) {
          return {
            type: 'next',
            checkpoint: this.checkpoint,
            target: leafTarget(node),
          };
        }
        const fanOut = await this.enterFlow(top, node);
        if (fanOut) return fanOut;
        continue;
      }
      // The walk of `top` has ended.
      if (top.kind === 'batch') {
        const list = top.prepRes as JsonObject[];
        const index = top.batchIndex ?? 0;
        if (index + 1 < list.length) {
          top.batchIndex = index + 1;
          top.node = graphNode(this.graph, top.flow).start!;
          delete top.lastAction;
          continue;
        }
      }
      if (top.kind === 'run' || top.kind === 'child') {
        this.checkpoint.frames = [];
        if (top.lastAction === undefined) delete this.checkpoint.lastAction;
        else this.checkpoint.lastAction = top.lastAction;
        return { type: 'completed', checkpoint: this.checkpoint, lastAction: top.lastAction };
      }
      const action = await this.exitFlow(top, top.kind === 'flow' ? top.lastAction : undefined);
      advancePast(this.graph, this.top(), action);
    }
    throw new QueueflowError(
      'INTERNAL',
      `flow '${this.graph.flowName}' crossed ${MAX_BOUNDARIES_PER_STEP} flow boundaries in one step without visiting a node (a loop of empty flows?)`,
      { retryable: false },
    );
  }

  /** Runs the flow's `post` with `execRes` and pops its frame; returns the action. */
  async exitFlow(frame: Frame, execRes: unknown): Promise<string | undefined> {
    const node = graphNode(this.graph, frame.flow);
    const copy = this.copyOf<Flow<any, any>>(node, frame.params);
    this.ctx.signal?.throwIfAborted();
    const action = (await copy.post(this.checkpoint.shared, frame.prepRes, execRes)) ?? undefined;
    assertJson(this.checkpoint.shared, 'shared');
    this.checkpoint.frames.pop();
    return action;
  }

  /**
   * Enters the flow at `parent.node`: runs its `prep` and pushes its frame. A ParallelBatchFlow
   * returns a `fan-out` outcome instead of walking its param sets here.
   */
  async enterFlow(parent: Frame, node: GraphNode): Promise<StepResult | undefined> {
    const params = walkParams(parent);
    const copy = this.copyOf<Flow<any, any>>(node, params);
    const shared = this.checkpoint.shared;
    if (node.kind === 'flow') {
      const prepRes = await copy.prep(shared);
      assertResult(prepRes, `prep result of '${node.id}'`);
      this.checkpoint.frames.push({
        kind: 'flow',
        flow: node.id,
        params,
        ...(prepRes === undefined ? {} : { prepRes: prepRes as Json }),
        node: node.start!,
      });
      return undefined;
    }
    const list = toParamList(copy, await copy.prep(shared));
    assertResult(list, `prep result of '${node.id}'`);
    if (node.kind === 'parallel-batch-flow' && list.length > 0) {
      this.checkpoint.frames.push({ kind: 'fan-out', flow: node.id, params, prepRes: list as Json });
      const { concurrency, onItemError } = fanOutPolicy(node);
      return {
        type: 'fan-out',
        checkpoint: this.checkpoint,
        fanOut: {
          kind: 'runs',
          flow: node.id,
          params: list.map((item) => ({ ...params, ...(item as JsonObject) })),
          start: node.start!,
          concurrency,
          onItemError,
        },
      };
    }
    const frame: Frame = { kind: 'batch', flow: node.id, params, prepRes: list as Json, batchIndex: 0 };
    if (list.length > 0) frame.node = node.start!;
    this.checkpoint.frames.push(frame);
    return undefined;
  }
}

/** Results of user code must survive JSON; `undefined` at the top is allowed (nothing). */
function assertResult(value: unknown, path: string): void {
  if (value !== undefined) assertJson(value, path);
}

/**
 * The node's limits for this try (those whose `when` holds): keys from the visit's params, units
 * from exec's input.
 */
function resolveLimits(copy: Node<any, any>, node: string, input: unknown): BudgetLimit[] {
  const params = copy.params as object;
  return copy
    .limits!.filter((limit) => limitApplies(limit, input, params, node))
    .map((limit) => ({
      key: limitKeyOf(limit, copy.params as object, node),
      concurrency: limit.concurrency,
      rate: limit.rate,
      units: limitCostOf(limit, input, node),
    }));
}
