import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node, ParallelBatchNode } from '../src/index.js';
import { compileGraph } from '../src/interpreter/graph.js';

class Named extends Node {}

describe('node option `queue`', () => {
  it('accepts names of letters, digits, _, - and ., and leaves the default queue out of targets', () => {
    expect(new Named({ queue: 'llm' }).queue).toBe('llm');
    expect(new Named({ queue: 'gpu-a100_2.eu' }).queue).toBe('gpu-a100_2.eu');
    expect(new Named().queue).toBeUndefined();
    const first = new Named({ name: 'first', queue: 'default' });
    first.next(new ParallelBatchNode({ name: 'second', queue: 'llm' }));
    const graph = compileGraph('routed', new Flow(first));
    expect(graph.nodes.get('first')?.queue).toBeUndefined();
    expect(graph.nodes.get('second')?.queue).toBe('llm');
  });

  it('refuses other names with a TypeError naming the node and the value', () => {
    for (const queue of ['', 'a b', 'a:b', '{x}', '-lead', 'x'.repeat(65)]) {
      expect(() => new Named({ queue })).toThrow(TypeError);
    }
    expect(() => new Named({ queue: 'a:b' })).toThrow(
      "Named: expected `queue` to be a queue name of 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit, got `'a:b'` (string)",
    );
    expect(() => new Named({ queue: 7 as unknown as string })).toThrow('got `7` (number)');
  });

  it('does not change the graph fingerprint (a deployment may move a node to another queue)', () => {
    const build = (queue?: string) =>
      compileGraph('f', new Flow(new Named({ name: 'n', ...(queue ? { queue } : {}) })));
    expect(build('llm').fingerprint).toBe(build().fingerprint);
  });

  it('runs every queue on LocalEngine, which reports serving them', async () => {
    const flow = defineFlow('queued', () => new Flow(new Named({ queue: 'llm' })));
    const engine = new LocalEngine({ flows: [flow] });
    try {
      expect((await engine.run(flow, {})).status).toBe('completed');
      expect((await engine.workers())[0]?.queues).toEqual(['default', 'llm']);
    } finally {
      await engine.close();
    }
  });
});
