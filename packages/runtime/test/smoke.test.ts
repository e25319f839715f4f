import { describe, expect, it } from 'vitest';
import { Flow, Node } from '../src/index.js';

describe('smoke', () => {
  it('runs a two-node flow', async () => {
    class A extends Node<{ log: string[] }> {
      override post(shared: { log: string[] }): string {
        shared.log.push('a');
        return 'go';
      }
    }
    class B extends Node<{ log: string[] }> {
      override post(shared: { log: string[] }): void {
        shared.log.push('b');
      }
    }
    const a = new A();
    a.on('go', new B());
    const shared = { log: [] as string[] };
    const last = await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a', 'b']);
    expect(last).toBeUndefined();
  });
});
