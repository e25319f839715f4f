/**
 * S7: a Flow is a node: it can be the start or a successor inside another Flow; its own
 * prep/post run around its walk, and by default its post returns the last action of its walk, so
 * a nested flow can branch its parent.
 */
import { describe, expect, it } from 'vitest';
import { BaseNode, Flow, Node } from '../src/index.js';
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

describe('S7 flows are nodes', () => {
  const warnings = captureWarnings();

  it('a Flow is a BaseNode', () => {
    expect(new Flow(new Tag('x'))).toBeInstanceOf(BaseNode);
  });

  it('await flow.run(shared) returns the last action of the walk', async () => {
    const a = new Tag('a');
    a.next(new Tag('b', 'finished'));
    expect(await new Flow(a).run({ log: [] })).toBe('finished');
    expect(await new Flow(new Tag('only')).run({ log: [] })).toBeUndefined();
  });

  it("the default post returns execRes, the walk's last action", async () => {
    const flow = new Flow(new Tag('x'));
    expect(await flow.post({ log: [] }, 'prep', 'last-action')).toBe('last-action');
  });

  it('its own prep and post run around the walk; post gets (shared, prepRes, lastAction)', async () => {
    const postArgs: unknown[][] = [];
    class Wrapped extends Flow<Shared> {
      override prep(shared: Shared): string {
        shared.log.push('flow prep');
        return 'flow prepRes';
      }
      override post(shared: Shared, prepRes: unknown, execRes: unknown): string {
        shared.log.push('flow post');
        postArgs.push([prepRes, execRes]);
        return 'flow action';
      }
    }
    const a = new Tag('a');
    a.next(new Tag('b', 'b-action'));
    const shared: Shared = { log: [] };
    const action = await new Wrapped(a).run(shared);
    expect(shared.log).toEqual(['flow prep', 'a', 'b', 'flow post']);
    expect(postArgs).toEqual([['flow prepRes', 'b-action']]);
    expect(action).toBe('flow action');
  });

  it('a nested flow branches its parent with its last action', async () => {
    const review = new Tag('review', 'reject');
    const inner = new Flow<Shared>(review);
    const start = new Tag('start');
    start.next(inner);
    inner.on('approve', new Tag('publish'));
    inner.on('reject', new Tag('revise'));
    const shared: Shared = { log: [] };
    const last = await new Flow(start).run(shared);
    expect(shared.log).toEqual(['start', 'review', 'revise']);
    expect(last).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('a nested flow can be the start node of its parent, and flows nest several deep', async () => {
    const innermost = new Flow<Shared>(new Tag('deep', 'up'));
    const middle = new Flow<Shared>(innermost);
    const outer = new Flow<Shared>(middle);
    middle.on('up', new Tag('after middle'));
    const shared: Shared = { log: [] };
    const last = await outer.run(shared);
    expect(shared.log).toEqual(['deep', 'after middle']);
    expect(last).toBeUndefined();
  });

  it('a nested flow whose post is overridden branches on what its post returns', async () => {
    class Decide extends Flow<Shared> {
      override post(): string {
        return 'override';
      }
    }
    const inner = new Decide(new Tag('inner', 'walk-action'));
    inner.on('override', new Tag('by post')).on('walk-action', new Tag('by walk'));
    const shared: Shared = { log: [] };
    await new Flow(inner).run(shared);
    expect(shared.log).toEqual(['inner', 'by post']);
  });

  it("a nested flow's prep and post run at each of its visits, around its walk", async () => {
    class Wrapped extends Flow<Shared> {
      override prep(shared: Shared): void {
        shared.log.push('[');
      }
      override post(shared: Shared, _p: unknown, last: unknown): string | undefined {
        shared.log.push(']');
        return last as string | undefined;
      }
    }
    let loops = 0;
    class Counter extends Node<Shared> {
      override post(shared: Shared): string {
        shared.log.push('n');
        return ++loops < 2 ? 'again' : 'out';
      }
    }
    const inner = new Wrapped(new Counter());
    inner.on('again', inner);
    const shared: Shared = { log: [] };
    const last = await new Flow(inner).run(shared);
    expect(shared.log).toEqual(['[', 'n', ']', '[', 'n', ']']);
    expect(last).toBe('out');
  });

  it("a Flow's exec throws: a Flow has no exec of its own", () => {
    expect(() => new Flow(new Tag('x')).exec(undefined)).toThrow("Flow can't exec.");
  });
});
