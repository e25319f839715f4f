import type { Message } from '../mailbox/message.js';
import type { StreamEntry } from '../stream/stream-types.js';

/**
 * Where a node visit runs, as node code reads it through `this.runContext`: the same facts on
 * `flow.run`, LocalEngine and RedisEngine.
 */
export interface RunContext {
  /**
   * Id of the run. On the engines, the run's id (a ParallelBatchNode item on an engine: its
   * parent run's); with `flow.run`, a fresh id per top-level `run` call.
   */
  readonly runId: string;
  /** The registered flow's name on the engines; with `flow.run`, the root flow's name or class name. */
  readonly flow: string;
  /**
   * The step counter when this visit began: on the engines the steps the run had committed
   * (`RunInfo.steps`); with `flow.run`, the node visits before this one.
   */
  readonly step: number;
  /** 0-based index of the current (or last) try of `exec` in this visit (`currentRetry`). */
  readonly attempt: number;
}

/** What the runner attaches to a per-visit copy (never to a template). */
export interface VisitFacts {
  readonly runId: string;
  readonly flow: string;
  readonly step: number;
  /** `flow.run` only: the run this visit belongs to, whose counter its nested walks go on. */
  readonly run?: FlowRunState;
  /** An agent's turn: the message it handles (`this.message`). */
  readonly message?: Message;
  /** An agent's turn: the agent's address (`this.agent`). */
  readonly agent?: string;
}

/** One top-level `flow.run`: its id and name, and the visits so far (nested flows included). */
export interface FlowRunState {
  readonly runId: string;
  readonly flow: string;
  visits: number;
  /** Where `this.emit` goes (the `onEmit` option of `flow.run`), and the last entry id given. */
  readonly stream?: { readonly onEmit: (entry: StreamEntry) => void; last: { ms: number; seq: number } };
}

const VISIT = Symbol('queueflow.visit');

/** Attaches the facts of the visit `node` (a per-visit copy) runs for. */
export function attachVisit(node: object, facts: VisitFacts): void {
  (node as Record<symbol, VisitFacts>)[VISIT] = facts;
}

/** The facts attached to `node`, if a runner attached any. */
export function visitOf(node: object): VisitFacts | undefined {
  return (node as Record<symbol, VisitFacts | undefined>)[VISIT];
}
