/**
 * Contract: node code reads where its visit runs through `this.runContext` (run id, flow name,
 * step counter, try index), the same on every engine as on `flow.run` (see
 * packages/runtime/test/run-context.test.ts for `flow.run`).
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchNode, type RunContext } from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type S = { seen: RunContext[]; items?: RunContext[] };

/** Records its runContext in prep, exec (each try) and post; fails its first `failTries` tries. */
class Probe extends Node<S> {
  constructor(
    name: string,
    private readonly failTries = 0,
  ) {
    super({ name, maxRetries: failTries + 1 });
  }
  override exec(): RunContext {
    const context = this.runContext!;
    if (context.attempt < this.failTries) throw new Error(`try ${context.attempt} fails`);
    return context;
  }
  override post(shared: S, _prepRes: unknown, context: RunContext): void {
    shared.seen.push(context);
  }
}

class Items extends ParallelBatchNode<S> {
  override prep(): number[] {
    return [0, 1];
  }
  override exec(): RunContext {
    return this.runContext!;
  }
  override post(shared: S, _prepRes: unknown, contexts: RunContext[]): void {
    shared.items = contexts;
  }
}

const steps = defineFlow('context-steps', () => {
  const first = new Probe('first');
  first.next(new Probe('second', 2)).next(new Items({ name: 'items' }));
  return new Flow(first);
});

describe.each(engines)('%s: runContext', (name) => {
  const setup = useEngine(name);

  it('names the run, the flow, the step counter and the try in every visit', async () => {
    const { engine } = await setup('run-context', { flows: [steps], autoAdvance: true });
    const handle = await engine.start(steps, { seen: [] } as S);
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.seen).toEqual([
      { runId: handle.id, flow: 'context-steps', step: 0, attempt: 0 },
      { runId: handle.id, flow: 'context-steps', step: 1, attempt: 2 }, // its third try succeeded
    ]);
    // Items of a ParallelBatchNode run as tasks of their parent run, at the step the parent
    // waits at once the fan-out committed (the step its fan-in then takes).
    expect(result.shared.items).toEqual([
      { runId: handle.id, flow: 'context-steps', step: 3, attempt: 0 },
      { runId: handle.id, flow: 'context-steps', step: 3, attempt: 0 },
    ]);
  });
});
