import { describe, expect, it } from 'vitest';
import { BatchFlow, BatchNode, defineFlow, Flow, LocalEngine, Node, ParallelBatchFlow, ParallelBatchNode } from '../src/index.js';

type S = Record<string, any>;

describe('LocalEngine smoke', () => {
  it('runs branching, nested, batch and parallel flows', async () => {
    class Inc extends Node<S> {
      override post(shared: S): string | undefined {
        shared.n = (shared.n ?? 0) + 1;
        return shared.n < 5 ? 'again' : 'done';
      }
    }
    class Items extends BatchNode<S> {
      override prep(): number[] { return [1, 2, 3]; }
      override exec(x: number): number { return x * 2; }
      override post(shared: S, _p: unknown, r: number[]): void { shared.doubled = r; }
    }
    class PItems extends ParallelBatchNode<S> {
      override prep(): number[] { return [1, 2, 3]; }
      override exec(x: number): number { return x * 10; }
      override post(shared: S, _p: unknown, r: number[]): void { shared.tens = r; }
    }
    class Write extends Node<S> {
      override post(shared: S): void { shared.results ??= {}; shared.results[this.params.key as string] = this.params.v; }
    }
    class Keys extends BatchFlow<S> { override prep(): object[] { return [{ key: 'a', v: 1 }, { key: 'b', v: 2 }]; } }
    class PKeys extends ParallelBatchFlow<S> { override prep(): object[] { return [{ key: 'c', v: 3 }, { key: 'd', v: 4 }]; } }
    const build = () => {
      const inc = new Inc();
      const items = new Items();
      inc.on('again', inc).on('done', items);
      const inner = new Flow(new Items());
      items.next(new PItems()).next(new Keys(new Write())).next(new PKeys(new Write())).next(inner);
      return new Flow(inc);
    };
    const def = defineFlow('smoke', build);
    const engine = new LocalEngine({ flows: [def] });
    const expected: S = {};
    await build().run(expected);
    const result = await engine.run('smoke', {});
    expect(result.status).toBe('completed');
    expect(result.shared).toEqual(expected);
    await engine.close();
  });
});
