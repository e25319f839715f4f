/**
 * The `run <flow>` span of a run is emitted by whoever commits its end: the worker (here the
 * LocalEngine) for a completed or failed run, the client for a cancelled one, and the cancel's
 * cascade for the child runs of a cancelled fan-out (children of the step that fanned out).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { defineAgent, defineFlow, Flow, LocalEngine, Node, ParallelBatchFlow } from '@queueflow/runtime';
import { aborted } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';

class Hold extends Node {
  override async exec(): Promise<void> {
    await aborted(this.signal);
    this.signal?.throwIfAborted();
  }
}
class Fan extends ParallelBatchFlow {
  override prep(): object[] {
    return [{ i: 0 }, { i: 1 }, { i: 2 }];
  }
}
class Boom extends Node {
  override exec(): void {
    throw new Error('boom');
  }
}

class Answer extends Node {
  override async prep(): Promise<void> {
    if (this.message!.replyTo) await this.reply(this.message!, 'ok');
  }
}
const answerer = defineAgent('answerer', { state: () => ({}), turn: () => new Answer({ name: 'answer' }) });

const held = defineFlow('held', () => new Flow(new Fan(new Hold({ name: 'hold' }), { name: 'fan' })));
const failing = defineFlow('failing', () => new Flow(new Boom({ name: 'boom' })));

describe('run spans', () => {
  const exporter = new InMemorySpanExporter();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  trace.setGlobalTracerProvider(provider);
  afterAll(() => provider.shutdown());

  it('ends a failed run with its error, and a cancelled fan-out with its children', async () => {
    const engine = new LocalEngine({ flows: [held, failing] });
    const failed = await engine.run(failing, {});
    expect(failed.status).toBe('failed');
    const handle = await engine.start(held, {});
    await waitFor('the children to run', async () => (await engine.children(handle.id)).length === 3);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await engine.cancel(handle.id);
    await waitFor('the spans', () => exporter.getFinishedSpans().filter((s) => s.name === 'run held').length === 4);
    const spans = exporter.getFinishedSpans();

    const failedRun = spans.find((s) => s.name === 'run failing')!;
    expect(failedRun.status).toMatchObject({ code: 2, message: 'boom' });
    expect(failedRun.attributes['queueflow.run.status']).toBe('failed');

    const runs = spans.filter((s) => s.name === 'run held');
    const parent = runs.find((s) => s.attributes['queueflow.run.id'] === handle.id)!;
    expect(parent.attributes['queueflow.run.status']).toBe('cancelled');
    const start = spans.find((s) => s.name === 'start held')!;
    expect(parent.parentSpanContext?.spanId).toBe(start.spanContext().spanId);
    const fanOutStep = spans.find((s) => s.name === 'step held' || s.name === 'step fan')!;
    const children = runs.filter((s) => s !== parent);
    expect(children.map((s) => s.attributes['queueflow.run.status'])).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(children.every((s) => s.parentSpanContext?.spanId === fanOutStep.spanContext().spanId)).toBe(true);
    await engine.close();
  });

  it("puts the agent and the conversation on a turn's step spans", async () => {
    const engine = new LocalEngine({ flows: [], agents: [answerer] });
    const ref = answerer.ref('a');
    await engine.ask(ref, {}, { conversation: { id: 'conv-span' }, timeoutMs: 5000 });
    await waitFor('the step span', () => exporter.getFinishedSpans().some((s) => s.name === 'step answer'));
    const step = exporter.getFinishedSpans().find((s) => s.name === 'step answer')!;
    expect(step.attributes).toMatchObject({ 'queueflow.agent': ref, 'queueflow.conversation': 'conv-span' });
    await engine.close();
  });
});
