/**
 * Metrics through @opentelemetry/api: with a MeterProvider registered, a LocalEngine's steps are
 * counted per flow and node (started, completed, failed), their durations recorded, and the
 * queue depth and parked runs observed at collection.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { defineAgent, defineFlow, Flow, LocalEngine, Node } from '@queueflow/runtime';

class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

class Flaky extends Node<{ token: string }> {
  constructor() {
    super({ name: 'flaky', maxRetries: 2 });
  }
  override exec(): void {
    if (this.currentRetry === 0) throw new Error('first try fails');
  }
}

class Wait extends Node {
  override async prep(): Promise<void> {
    await this.receive('metrics-nobody-sends-here');
  }
}

const flaky = defineFlow('metered', () => new Flow(new Flaky()));
const parked = defineFlow('parked', () => new Flow(new Wait({ name: 'wait' })));

describe('metrics', () => {
  const reader = new CollectingReader();
  const provider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(provider);
  afterAll(() => provider.shutdown());

  it('counts steps per flow and node, records durations, observes queue depth and parked runs', async () => {
    const engine = new LocalEngine({ flows: [flaky, parked] });
    expect((await engine.run(flaky, { token: 't' })).status).toBe('completed');
    const waiting = await engine.start(parked, {});
    await new Promise((resolve) => setTimeout(resolve, 50));

    const { resourceMetrics } = await reader.collect();
    const all: MetricData[] = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
    const points = (name: string) => all.find((m) => m.descriptor.name === name)?.dataPoints ?? [];
    const sum = (name: string, node: string): number =>
      points(name)
        .filter((p) => p.attributes['queueflow.node'] === node)
        .reduce((total, p) => total + (p.value as number), 0);
    expect(sum('queueflow.steps.started', 'flaky')).toBe(2);
    expect(sum('queueflow.steps.failed', 'flaky')).toBe(1);
    expect(sum('queueflow.steps.completed', 'flaky')).toBe(1);
    expect(points('queueflow.steps.started')[0]!.attributes['queueflow.flow']).toBeDefined();
    const durations = points('queueflow.step.duration').filter((p) => p.attributes['queueflow.node'] === 'flaky');
    expect(durations.map((p) => p.attributes['queueflow.step.outcome']).sort()).toEqual(['completed', 'retry']);
    expect(points('queueflow.runs.parked').map((p) => p.value)).toEqual([1]);
    expect(points('queueflow.queue.depth').map((p) => p.value)).toEqual([0]);
    await engine.cancel(waiting.id);
    await engine.close();
  });

  it('observes the inboxes of each agent type: messages, the deepest key, keys at capacity', async () => {
    // A turn that waits on a mailbox nobody sends to: its key's later messages stay in its inbox.
    const stuck = defineAgent('metrics-stuck', { state: () => ({}), turn: () => new Wait(), capacity: 3 });
    const engine = new LocalEngine({ flows: [], agents: [stuck] });
    for (const body of [1, 2, 3]) await engine.send(stuck.ref('a'), body);
    await engine.send(stuck.ref('b'), 1);
    const { resourceMetrics } = await reader.collect();
    const all: MetricData[] = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
    const of = (name: string) =>
      (all.find((m) => m.descriptor.name === name)?.dataPoints ?? [])
        .filter((p) => p.attributes['queueflow.agent.type'] === 'metrics-stuck')
        .map((p) => p.value);
    expect(of('queueflow.agent.inbox.messages')).toEqual([4]);
    expect(of('queueflow.agent.inbox.deepest')).toEqual([3]);
    expect(of('queueflow.agent.inbox.full')).toEqual([1]);
    await engine.close();
  });
});
