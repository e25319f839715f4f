import { metrics, type BatchObservableResult, type Counter, type Histogram, type Meter } from '@opentelemetry/api';
import type { InboxDepth } from '../agent/inbox-depth.js';

/**
 * queueflow's metrics, through `@opentelemetry/api` (the application registers a MeterProvider;
 * without one every instrument is a no-op). Instruments are made on first use, from the global
 * meter provider at that moment.
 *
 * | instrument | kind | attributes |
 * |---|---|---|
 * | `queueflow.steps.started` | counter | `queueflow.flow`, `queueflow.node` |
 * | `queueflow.steps.completed` | counter (a try that went on: next, completed, fan-out) | same |
 * | `queueflow.steps.failed` | counter (a try that failed: retried or failing the run) | same |
 * | `queueflow.step.duration` | histogram, ms, every try | same, `queueflow.step.outcome` |
 * | `queueflow.queue.depth` | observable gauge: tasks waiting for a worker | |
 * | `queueflow.runs.parked` | observable gauge: runs parked on a mailbox | |
 * | `queueflow.agent.inbox.messages`, `.deepest`, `.full` | observable gauges: an agent type's inboxes | `queueflow.agent.type` |
 * | `queueflow.budget.waits` | counter: visits that waited for a budget (flow control) | `queueflow.budget` |
 */
export interface QueueflowMetrics {
  stepsStarted: Counter;
  stepsCompleted: Counter;
  stepsFailed: Counter;
  stepDuration: Histogram;
  /** Visits that waited for budget (rate or concurrency) before they ran: for flow control. */
  budgetWaits: Counter;
}

let made: QueueflowMetrics | undefined;
let madeBy: Meter | undefined;

/** The meter queueflow's instruments come from. */
function meter(): Meter {
  return metrics.getMeter('@queueflow/runtime');
}

/** queueflow's instruments (made once per meter provider). */
export function queueflowMetrics(): QueueflowMetrics {
  const current = meter();
  if (made && madeBy === current) return made;
  madeBy = current;
  made = {
    stepsStarted: current.createCounter('queueflow.steps.started', { description: 'Tries of steps started' }),
    stepsCompleted: current.createCounter('queueflow.steps.completed', {
      description: 'Tries of steps that went on (next, completed, fan-out)',
    }),
    stepsFailed: current.createCounter('queueflow.steps.failed', {
      description: 'Tries of steps that failed (to be retried, or failing the run)',
    }),
    stepDuration: current.createHistogram('queueflow.step.duration', {
      description: 'Duration of a try of a step, from its start to its commit',
      unit: 'ms',
    }),
    budgetWaits: current.createCounter('queueflow.budget.waits', {
      description: 'Visits that waited for budget (rate or concurrency) before they ran',
    }),
  };
  return made;
}

/** What an engine can count for the observable gauges. */
export interface GaugeSource {
  /** Tasks (steps, wakes, items) waiting for a worker now. */
  queueDepth(): Promise<number> | number;
  /** Runs parked on a mailbox now. */
  parkedRuns(): Promise<number> | number;
  /** The inboxes of each agent type with messages waiting (see `inboxDepths`); absent: no agents. */
  agentInboxes?(): Promise<InboxDepth[]>;
}

/**
 * Registers the observable gauges `queueflow.queue.depth` and `queueflow.runs.parked` for
 * `source` (read when the application's metric reader collects), and with `agentInboxes`, per
 * agent type (attribute `queueflow.agent.type`): `queueflow.agent.inbox.messages` (messages
 * waiting in its inboxes), `queueflow.agent.inbox.deepest` (the most one key holds) and
 * `queueflow.agent.inbox.full` (keys at their type's capacity). Returns the unregister function.
 */
export function observeGauges(source: GaugeSource): () => void {
  const current = meter();
  const depth = current.createObservableGauge('queueflow.queue.depth', {
    description: 'Tasks (steps, wakes, items) waiting for a worker',
  });
  const parked = current.createObservableGauge('queueflow.runs.parked', {
    description: 'Runs parked on a mailbox, waiting for a message',
  });
  const inbox = {
    messages: current.createObservableGauge('queueflow.agent.inbox.messages', {
      description: "Messages waiting in the inboxes of an agent type's keys",
    }),
    deepest: current.createObservableGauge('queueflow.agent.inbox.deepest', {
      description: 'The most messages one key of an agent type holds',
    }),
    full: current.createObservableGauge('queueflow.agent.inbox.full', {
      description: "Keys of an agent type whose inbox holds the type's capacity",
    }),
  };
  const gauges = [depth, parked, ...(source.agentInboxes ? Object.values(inbox) : [])];
  const callback = async (result: BatchObservableResult): Promise<void> => {
    const [queued, waiting, inboxes] = await Promise.all([
      source.queueDepth(),
      source.parkedRuns(),
      source.agentInboxes?.() ?? [],
    ]);
    result.observe(depth, queued);
    result.observe(parked, waiting);
    for (const { type, messages, deepest, full } of inboxes) {
      const attributes = { 'queueflow.agent.type': type };
      result.observe(inbox.messages, messages, attributes);
      result.observe(inbox.deepest, deepest, attributes);
      result.observe(inbox.full, full, attributes);
    }
  };
  current.addBatchObservableCallback(callback, gauges);
  return () => current.removeBatchObservableCallback(callback, gauges);
}
