/**
 * S4: a.next(b) sets a's "default" successor and returns b; a.on(action, b) sets a named
 * successor; overwriting a successor warns.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_ACTION, Flow, Node } from '../src/index.js';
import { captureWarnings } from './helpers.js';

class Tag extends Node<{ log: string[] }> {
  constructor(
    readonly tag: string,
    private readonly action?: string,
  ) {
    super();
  }
  override post(shared: { log: string[] }): string | undefined {
    shared.log.push(this.tag);
    return this.action;
  }
}

describe('S4 next / on', () => {
  const warnings = captureWarnings();

  it('next(b) sets the "default" successor and returns b', () => {
    const a = new Tag('a');
    const b = new Tag('b');
    const returned = a.next(b);
    expect(returned).toBe(b);
    expect(a.successors.get('default')).toBe(b);
    expect(a.successors.get(DEFAULT_ACTION)).toBe(b);
    expect(DEFAULT_ACTION).toBe('default');
    expect([...a.successors.keys()]).toEqual(['default']);
    expect(b.successors.size).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('on(action, b) sets a named successor and returns this', () => {
    const a = new Tag('a');
    const b = new Tag('b');
    const c = new Tag('c');
    const returned = a.on('yes', b).on('no', c);
    expect(returned).toBe(a);
    expect(a.successors.get('yes')).toBe(b);
    expect(a.successors.get('no')).toBe(c);
    expect(a.successors.has('default')).toBe(false);
    expect(warnings).toEqual([]);
  });

  it('a.next(b).next(c) chains a → b → c', async () => {
    const a = new Tag('a');
    const b = new Tag('b');
    const c = new Tag('c');
    a.next(b).next(c);
    expect(a.successors.get('default')).toBe(b);
    expect(b.successors.get('default')).toBe(c);
    const shared = { log: [] as string[] };
    await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a', 'b', 'c']);
  });

  it('overwriting the default successor warns QF_SUCCESSOR_OVERWRITTEN and the new one wins', async () => {
    const a = new Tag('a');
    a.next(new Tag('old'));
    expect(warnings).toEqual([]);
    a.next(new Tag('new'));
    expect(warnings).toEqual([
      { code: 'QF_SUCCESSOR_OVERWRITTEN', message: "Overwriting successor for action 'default'" },
    ]);
    const shared = { log: [] as string[] };
    await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a', 'new']);
  });

  it('overwriting a named successor warns with the action name', () => {
    const a = new Tag('a');
    a.on('retry', new Tag('x')).on('done', new Tag('y'));
    expect(warnings).toEqual([]);
    a.on('retry', new Tag('z'));
    expect(warnings).toEqual([
      { code: 'QF_SUCCESSOR_OVERWRITTEN', message: "Overwriting successor for action 'retry'" },
    ]);
  });

  it('on("default", b) and next(b) are the same slot', () => {
    const a = new Tag('a');
    const b = new Tag('b');
    a.on('default', b);
    a.next(b);
    expect(warnings.map((w) => w.code)).toEqual(['QF_SUCCESSOR_OVERWRITTEN']);
  });

  it('on refuses a non-string action', () => {
    const a = new Tag('a');
    expect(() => a.on(42 as unknown as string, new Tag('b'))).toThrow(TypeError);
  });
});
