import type { StreamEntry } from '../stream/stream-types.js';
import { newRunId } from '../kernel/run-id.js';
import { BaseNode, visitCopy } from './base-node.js';
import { Node } from './node.js';
import { attachVisit, visitOf, type FlowRunState } from './run-context.js';
import { isPromiseLike, type Action, type MaybePromise, type NonIterableObject, type ParamsObject } from './types.js';
import { invalidOption } from './validate-options.js';
import { checkOptionNames } from './check-option-names.js';

/** Options of one `flow.run` call (beyond PocketFlow's `shared`). */
export interface FlowRunOptions {
  /**
   * Called with each entry node code emits (`this.emit`), synchronously, in emit order: the
   * run's stream without an engine. Entries carry the same fields as `engine.stream`'s (`step`
   * counts node visits). @defaultValue entries are dropped
   */
  onEmit?: (entry: StreamEntry) => void;
}

/** Options of {@link Flow} and the batch flows. */
export interface FlowOptions {
  /** Stable name, used as the flow's id by the engines. */
  name?: string;
}

/**
 * Walks a graph: starts at `start`, runs a copy of each node with the flow's params, and
 * follows `successors[action ?? "default"]` until a node has no successor for its action
 * (rules S5, S6). A Flow is a node: it nests, its own `prep`/`post` run around the walk, and its
 * default `post` returns the walk's last action, so a nested flow can branch its parent (S7).
 *
 * @example
 * ```ts
 * const review = new Review();
 * review.on('approve', new Publish()).on('reject', new Revise());
 * const flow = new Flow(review);
 * const lastAction = await flow.run({ draft: '...' });
 * ```
 * @see PocketFlow `Flow` (Python reference; its `post` returns the last action).
 */
export class Flow<S = unknown, P extends ParamsObject = NonIterableObject> extends BaseNode<S, P> {
  /**
   * The option names the constructor takes ({@link FlowOptions}); any other name is refused
   * (`INVALID_OPTION`, naming the closest known one). A subclass passing options of its own on to
   * `super` adds their names: `static override optionNames = [...Flow.optionNames, 'mine']`.
   */
  static optionNames: readonly string[] = ['name'];

  start: BaseNode<any, any>;

  /**
   * @param start - the node the walk starts at. Without type arguments, the flow takes its shared
   *   store and params types from it: when class `Count` extends `Node<Store, Lang>`,
   *   `new Flow(new Count())` is a `Flow<Store, Lang>`. With type arguments
   *   (`new Flow<Store>(start)`), any node is accepted, as PocketFlow accepts any node.
   */
  constructor(start: BaseNode<S, P> | BaseNode<any, any>, options: FlowOptions = {}) {
    super();
    const owner = new.target.name;
    if (!(start instanceof BaseNode)) throw invalidOption(owner, 'start', 'a node (BaseNode)', start);
    if (typeof options !== 'object' || options === null) throw invalidOption(owner, 'options', 'an object', options);
    checkOptionNames(owner, options, (new.target as typeof Flow).optionNames);
    if (options.name !== undefined && (typeof options.name !== 'string' || options.name === '')) {
      throw invalidOption(owner, 'name', 'a non-empty string', options.name);
    }
    this.start = start;
    if (options.name !== undefined) this.name = options.name;
  }

  /**
   * @internal Walks the graph once with `params` (default: the flow's own) and returns the last
   * action. Checks `abort` before each visit: an abandoned branch stops at the step boundary.
   *
   * This loop is `flow.run`'s hot path. A visit of a node whose `_run` is the plain one (S1) runs
   * here inline rather than through `_run` and `_exec`: each async frame between the loop and the
   * node's own methods costs a promise and a microtask turn per visit, and a lifecycle method
   * that returns a plain value is not awaited at all.
   */
  async _orchestrate(shared: S, params?: P, abort?: AbortSignal): Promise<Action | undefined> {
    const walkParams = params ?? ({ ...this._params } as P);
    const run = visitOf(this)?.run ?? this.newRunState();
    let current: BaseNode<any, any> | undefined = visitCopy(this.start, walkParams);
    let lastAction: Action | undefined;
    while (current) {
      abort?.throwIfAborted();
      attachVisit(current, { runId: run.runId, flow: run.flow, step: run.visits++, run });
      if (current._run === plainRun) {
        let prepRes = current.prep(shared);
        if (isPromiseLike(prepRes)) prepRes = await prepRes;
        let execRes: unknown;
        if (
          current._exec === nodeExec &&
          (current as Node).timeoutMs === undefined &&
          (current as Node).limits === undefined
        ) {
          // Node's first try, inline; a failed one goes on with the retry policy (S2, S3).
          const node = current as Node;
          abort?.throwIfAborted();
          node.currentRetry = 0;
          if (abort) node.signal = abort;
          try {
            execRes = node.exec(prepRes);
            if (isPromiseLike(execRes)) execRes = await execRes;
          } catch (error) {
            execRes = await node._execAfterFailedTry(prepRes, 0, error, abort);
          }
        } else if (current._exec === plainExec) {
          execRes = current.exec(prepRes);
          if (isPromiseLike(execRes)) execRes = await execRes;
        } else {
          execRes = await current._exec(prepRes, abort);
        }
        abort?.throwIfAborted();
        let action = current.post(shared, prepRes, execRes);
        if (isPromiseLike(action)) action = await action;
        lastAction = action ?? undefined;
      } else {
        lastAction = await current._run(shared, abort);
      }
      const next = current.getNextNode(lastAction);
      current = next && visitCopy(next, walkParams);
    }
    return lastAction;
  }

  /** A top-level `flow.run`: a fresh run id, named after this flow. */
  private newRunState(options: FlowRunOptions = {}): FlowRunState {
    const onEmit = options.onEmit;
    if (onEmit !== undefined && typeof onEmit !== 'function') {
      throw invalidOption(`${this.constructor.name}.run`, 'onEmit', 'a function', onEmit);
    }
    return {
      runId: newRunId(),
      flow: this.name ?? this.constructor.name,
      visits: 0,
      ...(onEmit ? { stream: { onEmit, last: { ms: 0, seq: 0 } } } : {}),
    };
  }

  /**
   * Runs the flow (rules S5–S7) as a run of its own, which `runContext` names inside. The walk
   * runs on a thin per-call object whose prototype is this flow (as each visit runs on a copy,
   * rule S6), so that concurrent `run` calls on one flow object keep their own run.
   * `options.onEmit` receives what node code emits (`this.emit`).
   */
  override run(shared: S, options?: FlowRunOptions): Promise<Action | undefined> {
    const self = Object.create(this) as this;
    const run = this.newRunState(options);
    attachVisit(self, { runId: run.runId, flow: run.flow, step: 0, run });
    return BaseNode.prototype.run.call(self, shared) as Promise<Action | undefined>;
  }

  override async _run(shared: S, abort?: AbortSignal): Promise<Action | undefined> {
    const prepRes = await this.prep(shared);
    const lastAction = await this._orchestrate(shared, undefined, abort);
    abort?.throwIfAborted();
    return (await this.post(shared, prepRes, lastAction)) ?? undefined;
  }

  /** Returns `execRes`, which for a Flow is the last action of its walk (rule S7). */
  override post(_shared: S, _prepRes: unknown, execRes: unknown): MaybePromise<Action | undefined | void> {
    return execRes as Action | undefined;
  }

  /** A Flow has no `exec` of its own. @throws Error always. */
  override exec(_prepRes: unknown): MaybePromise<unknown> {
    throw new Error("Flow can't exec.");
  }
}

// The plain visit and tries that `_orchestrate` runs inline (a subclass that overrides them runs its own).
const plainRun = BaseNode.prototype._run;
const plainExec = BaseNode.prototype._exec;
const nodeExec = Node.prototype._exec;
