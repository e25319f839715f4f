/**
 * S5: a Flow starts at its start node and follows successors[action ?? "default"]. If there is
 * none and the node has successors, it warns `Flow ends: '<action>' not found in [...]` and
 * stops; if the node has no successors it just stops.
 */
import { describe, expect, it } from 'vitest';
import { Flow, Node } from '../src/index.js';
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

describe('S5 flow walk', () => {
  const warnings = captureWarnings();

  it('starts at the start node and follows the returned actions', async () => {
    const start = new Tag('start', 'left');
    const left = new Tag('left');
    const right = new Tag('right');
    start.on('left', left).on('right', right);
    left.next(new Tag('end'));
    const shared: Shared = { log: [] };
    await new Flow(start).run(shared);
    expect(shared.log).toEqual(['start', 'left', 'end']);
    expect(warnings).toEqual([]);
  });

  it('undefined and "" both mean "default"', async () => {
    const a = new Tag('a', undefined);
    const b = new Tag('b', '');
    a.next(b).next(new Tag('c'));
    const shared: Shared = { log: [] };
    await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a', 'b', 'c']);
    expect(warnings).toEqual([]);
  });

  it('an action with no successor, on a node that has successors, warns QF_FLOW_ENDS and stops', async () => {
    const a = new Tag('a', 'missing');
    a.on('yes', new Tag('yes')).on('no', new Tag('no'));
    const shared: Shared = { log: [] };
    const last = await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a']);
    expect(last).toBe('missing');
    expect(warnings).toEqual([{ code: 'QF_FLOW_ENDS', message: "Flow ends: 'missing' not found in [yes, no]" }]);
  });

  it('undefined with no "default" successor but others warns, naming "default"', async () => {
    const a = new Tag('a');
    a.on('other', new Tag('other'));
    const shared: Shared = { log: [] };
    await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a']);
    expect(warnings).toEqual([{ code: 'QF_FLOW_ENDS', message: "Flow ends: 'default' not found in [other]" }]);
  });

  it('a node with no successors just stops, silently, whatever its action', async () => {
    const a = new Tag('a');
    a.next(new Tag('last', 'anything'));
    const shared: Shared = { log: [] };
    const last = await new Flow(a).run(shared);
    expect(shared.log).toEqual(['a', 'last']);
    expect(last).toBe('anything');
    expect(warnings).toEqual([]);
  });

  it('a single node flow runs its start node once', async () => {
    const shared: Shared = { log: [] };
    await new Flow(new Tag('only')).run(shared);
    expect(shared.log).toEqual(['only']);
    expect(warnings).toEqual([]);
  });

  it('loops until the action leaves the loop', async () => {
    class Counter extends Node<{ n: number }> {
      override post(shared: { n: number }): string {
        shared.n++;
        return shared.n < 5 ? 'again' : 'done';
      }
    }
    const counter = new Counter();
    counter.on('again', counter);
    const shared = { n: 0 };
    const last = await new Flow(counter).run(shared);
    expect(shared.n).toBe(5);
    expect(last).toBe('done');
    expect(warnings).toEqual([{ code: 'QF_FLOW_ENDS', message: "Flow ends: 'done' not found in [again]" }]);
  });

  it('getNextNode returns the successor for an action (undefined → "default")', () => {
    const a = new Tag('a');
    const b = new Tag('b');
    const c = new Tag('c');
    a.next(b);
    a.on('c', c);
    expect(a.getNextNode()).toBe(b);
    expect(a.getNextNode('default')).toBe(b);
    expect(a.getNextNode('c')).toBe(c);
    expect(warnings).toEqual([]);
    expect(a.getNextNode('x')).toBeUndefined();
    expect(warnings.map((w) => w.code)).toEqual(['QF_FLOW_ENDS']);
    expect(new Tag('alone').getNextNode('x')).toBeUndefined();
    expect(warnings).toHaveLength(1);
  });
});
