import { describe, expect, it } from 'vitest';
import { Flow, Node, type RunContext } from '../src/index.js';

type S = { seen: RunContext[] };

class Probe extends Node<S> {
  constructor(private readonly failTries = 0) {
    super({ maxRetries: failTries + 1 });
  }
  override exec(): RunContext {
    const context = this.runContext!;
    if (context.attempt < this.failTries) throw new Error('fails');
    return context;
  }
  override post(shared: S, _prepRes: unknown, context: RunContext): void {
    shared.seen.push(context);
  }
}

describe('runContext on flow.run', () => {
  it('names a fresh run per run call, the root flow, the visits before this one and the try', async () => {
    const first = new Probe();
    first.next(new Probe(1)).next(new Flow(new Probe(), { name: 'inner' }));
    const flow = new Flow(first, { name: 'outer' });
    const a: S = { seen: [] };
    const b: S = { seen: [] };
    await Promise.all([flow.run(a), flow.run(b)]);
    const runId = a.seen[0]!.runId;
    expect(a.seen).toEqual([
      { runId, flow: 'outer', step: 0, attempt: 0 },
      { runId, flow: 'outer', step: 1, attempt: 1 },
      { runId, flow: 'outer', step: 3, attempt: 0 }, // the nested flow's visit was step 2
    ]);
    expect(b.seen[0]!.runId).not.toBe(runId); // concurrent runs of one flow object each have their own
    expect(new Set(b.seen.map((c) => c.runId)).size).toBe(1);
  });

  it('is undefined outside any run', () => {
    expect(new Probe().runContext).toBeUndefined();
  });
});
