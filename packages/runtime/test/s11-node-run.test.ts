/**
 * S11: node.run(shared) on a node that has successors warns `Node won't run successors. Use
 * Flow.` and runs only that node.
 */
import { describe, expect, it } from 'vitest';
import { BatchNode, Flow, Node } from '../src/index.js';
import { captureWarnings } from './helpers.js';

interface Shared {
  log: string[];
}

class Tag extends Node<Shared> {
  constructor(
    readonly tag: string,
    private readonly action?: string,
  ) {
    super();
  }
  override post(shared: Shared): string | undefined {
    shared.log.push(this.tag);
    return this.action;
  }
}

describe('S11 node.run', () => {
  const warnings = captureWarnings();

  it('on a node with successors: warns QF_NODE_WONT_RUN_SUCCESSORS and runs only that node', async () => {
    const a = new Tag('a', 'go');
    a.next(new Tag('b'));
    a.on('go', new Tag('c'));
    const shared: Shared = { log: [] };
    const action = await a.run(shared);
    expect(shared.log).toEqual(['a']);
    expect(action).toBe('go');
    expect(warnings).toEqual([
      { code: 'QF_NODE_WONT_RUN_SUCCESSORS', message: "Node won't run successors. Use Flow." },
    ]);
  });

  it('warns before the node runs', async () => {
    const order: string[] = [];
    class Early extends Node<Shared> {
      override prep(): void {
        order.push(`prep (warnings so far: ${warnings.length})`);
      }
    }
    const n = new Early();
    n.next(new Tag('b'));
    await n.run({ log: [] });
    expect(order).toEqual(['prep (warnings so far: 1)']);
  });

  it('on a node without successors: no warning', async () => {
    const shared: Shared = { log: [] };
    await new Tag('alone').run(shared);
    expect(shared.log).toEqual(['alone']);
    expect(warnings).toEqual([]);
  });

  it('applies to every node kind: a BatchNode and a Flow with successors warn too', async () => {
    class Batch extends BatchNode<Shared> {
      override prep(): number[] {
        return [1];
      }
    }
    const batch = new Batch();
    batch.next(new Tag('after batch'));
    const flow = new Flow<Shared>(new Tag('inside'));
    flow.next(new Tag('after flow'));
    const shared: Shared = { log: [] };
    await batch.run(shared);
    await flow.run(shared);
    expect(shared.log).toEqual(['inside']);
    expect(warnings.map((w) => w.code)).toEqual(['QF_NODE_WONT_RUN_SUCCESSORS', 'QF_NODE_WONT_RUN_SUCCESSORS']);
  });

  it('the same node inside a Flow runs its successors without that warning', async () => {
    const a = new Tag('a');
    a.next(new Tag('b'));
    const shared: Shared = { log: [] };
    await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a', 'b']);
    expect(warnings).toEqual([]);
  });
});
