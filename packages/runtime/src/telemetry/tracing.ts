import {
  SpanKind,
  SpanStatusCode,
  context,
  trace,
  type Attributes,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import type { ErrorRecord, RunError } from '../errors/error-record.js';
import { queueflowMetrics } from './metrics.js';
import { contextOf, spanContextOf, traceparentOf } from './trace-context.js';
import { emitStepEvent, type StepEvent } from './step-listener.js';

/**
 * queueflow's traces, through `@opentelemetry/api` only (the application registers the SDK; with
 * none registered every span is a no-op that records nothing and costs next to nothing):
 *
 * - `start <flow>` (PRODUCER): the client starting a run, a child of the span active there; its
 *   context is written into the run's record, so every step of the run, on any worker, joins
 *   its trace;
 * - `step <node>` (CONSUMER): one try of a step, on the worker that ran it, a child of the run's
 *   context (node code runs inside it: spans it starts are its children); a failed try records
 *   its error (recordException, status ERROR); a message it received links to the step that sent
 *   it;
 * - `item <node>`: one try of an item of a ParallelBatchNode fan-out, a child of the fan-out
 *   step's span; a ParallelBatchFlow's child runs are in the trace as children of it too;
 * - `run <flow>`: the whole run, from its creation to its end (emitted by whoever commits the
 *   end, with the run's `createdAt` as its start), status and error.
 *
 * Attributes: `queueflow.run.id`, `queueflow.flow`, `queueflow.node`, `queueflow.step`,
 * `queueflow.attempt` (and `queueflow.item`, `queueflow.run.status`, `queueflow.step.outcome`; an
 * agent's turn: `queueflow.agent`, and `queueflow.conversation`, also on its metrics).
 */

const ATTRIBUTES = {
  runId: 'queueflow.run.id',
  flow: 'queueflow.flow',
  node: 'queueflow.node',
  step: 'queueflow.step',
  attempt: 'queueflow.attempt',
  item: 'queueflow.item',
  runStatus: 'queueflow.run.status',
  outcome: 'queueflow.step.outcome',
  agent: 'queueflow.agent',
  conversation: 'queueflow.conversation',
} as const;

let cached: { provider: TracerProvider; tracer: Tracer } | undefined;

/**
 * queueflow's tracer, from the global tracer provider (a proxy until the application registers
 * one); made again only when the global provider changes (`trace.disable()` and a new one).
 */
function tracer(): Tracer {
  const provider = trace.getTracerProvider();
  if (cached?.provider !== provider) cached = { provider, tracer: provider.getTracer('@queueflow/runtime') };
  return cached.tracer;
}

/** The client's span of a run's start, and the trace context to store in the run's record. */
export function startRunSpan(flow: string, runId: string): { span: Span; trace: string | undefined } {
  const span = tracer().startSpan(`start ${flow}`, {
    kind: SpanKind.PRODUCER,
    attributes: { [ATTRIBUTES.runId]: runId, [ATTRIBUTES.flow]: flow },
  });
  return { span, trace: traceparentOf(span) };
}

/** Where a try runs: the run, flow, node, step and attempt (and the item, for an item). */
export interface TryFacts {
  runId: string;
  flow: string;
  node: string;
  step: number;
  attempt: number;
  item?: number;
  /** The trace context of the run (or, for an item, of its fan-out step). */
  parent: string | undefined;
  /** An agent's turn: the agent's address, and the conversation of its message. */
  agent?: string | undefined;
  conversation?: string | undefined;
}

/** One try of a step or item, traced and counted. */
export class TrySpan {
  readonly span: Span;
  private readonly startedAt = performance.now();
  private readonly metricAttributes: Attributes;
  private readonly facts: TryFacts;

  constructor(facts: TryFacts) {
    this.facts = facts;
    // A conversation's id on its turns' spans and metrics, so a backend can group what a team did.
    const conversation = facts.conversation === undefined ? {} : { [ATTRIBUTES.conversation]: facts.conversation };
    this.metricAttributes = { [ATTRIBUTES.flow]: facts.flow, [ATTRIBUTES.node]: facts.node, ...conversation };
    const kind = facts.item === undefined ? 'step' : 'item';
    this.span = tracer().startSpan(
      `${kind} ${facts.node}`,
      {
        kind: facts.item === undefined ? SpanKind.CONSUMER : SpanKind.INTERNAL,
        attributes: {
          [ATTRIBUTES.runId]: facts.runId,
          [ATTRIBUTES.flow]: facts.flow,
          [ATTRIBUTES.node]: facts.node,
          [ATTRIBUTES.step]: facts.step,
          [ATTRIBUTES.attempt]: facts.attempt,
          ...(facts.item === undefined ? {} : { [ATTRIBUTES.item]: facts.item }),
          ...(facts.agent === undefined ? {} : { [ATTRIBUTES.agent]: facts.agent }),
          ...conversation,
        },
      },
      contextOf(facts.parent),
    );
    queueflowMetrics().stepsStarted.add(1, this.metricAttributes);
    emitStepEvent(() => ({ type: 'started', ...factsOf(facts) }));
  }

  /** This try's trace context (for what it starts: children, items, messages). */
  get trace(): string | undefined {
    return traceparentOf(this.span);
  }

  /** Runs `body` with this try's span active, so spans node code starts are its children. */
  run<T>(body: () => Promise<T>): Promise<T> {
    return context.with(trace.setSpan(context.active(), this.span), body);
  }

  /** Links this try to the step that sent a message it received. */
  linkTo(traceparent: string | undefined): void {
    const sender = spanContextOf(traceparent);
    if (sender) this.span.addLink({ context: sender });
  }

  /**
   * Ends the span: `outcome` is what the try came to (`next`, `completed`, `fan-out`, `park`,
   * `retry`, `failed`); `error` the error of a failed try.
   */
  end(outcome: string, error?: ErrorRecord): void {
    const metrics = queueflowMetrics();
    const failed = outcome === 'retry' || outcome === 'failed';
    if (failed) metrics.stepsFailed.add(1, this.metricAttributes);
    else if (outcome !== 'park') metrics.stepsCompleted.add(1, this.metricAttributes);
    const durationMs = performance.now() - this.startedAt;
    emitStepEvent(() => ({ type: 'ended', ...factsOf(this.facts), outcome, durationMs, ...(error ? { error } : {}) }));
    metrics.stepDuration.record(durationMs, {
      ...this.metricAttributes,
      [ATTRIBUTES.outcome]: outcome,
    });
    this.span.setAttribute(ATTRIBUTES.outcome, outcome);
    if (error) {
      this.span.recordException({
        name: error.name,
        message: error.message,
        ...(error.stack ? { stack: error.stack } : {}),
      });
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
    this.span.end();
  }
}

/** The facts of a try a {@link StepEvent} carries. */
function factsOf(facts: TryFacts): Omit<StepEvent, 'type'> {
  const { runId, flow, node, step, attempt, item } = facts;
  return { runId, flow, node, step, attempt, ...(item === undefined ? {} : { item }) };
}

/**
 * The span of a whole run, from its creation to `endedAt` (epoch ms), emitted by whoever commits
 * its end; nothing when the run has no trace context (no tracer provider where it started).
 */
export function recordRunEnd(
  run: { id: string; flow: string; createdAt: number; trace?: string | undefined },
  status: string,
  endedAt: number,
  error?: RunError,
): void {
  if (!spanContextOf(run.trace)) return;
  const span = tracer().startSpan(
    `run ${run.flow}`,
    {
      startTime: run.createdAt,
      attributes: { [ATTRIBUTES.runId]: run.id, [ATTRIBUTES.flow]: run.flow, [ATTRIBUTES.runStatus]: status },
    },
    contextOf(run.trace),
  );
  if (error) {
    span.recordException({ name: error.name ?? 'Error', message: error.message });
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  }
  span.end(endedAt);
}
