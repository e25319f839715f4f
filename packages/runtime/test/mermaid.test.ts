import { describe, expect, it } from 'vitest';
import { BatchNode, defineFlow, Flow, Node, ParallelBatchFlow, toMermaid } from '../src/index.js';

class Draft extends Node {}
class Check extends Node {}
class Publish extends Node {}
class Chunks extends BatchNode {}

describe('toMermaid', () => {
  it('draws nodes by their stable ids, actions on edges, and the start', () => {
    const review = defineFlow('review', () => {
      const draft = new Draft();
      draft.next(new Check({ name: 'check "style"' })).on('revise', draft);
      return new Flow(draft, { name: 'review' });
    });
    expect(toMermaid(review)).toBe(
      [
        'flowchart TD',
        '  subgraph n0["review (flow)"]',
        '    n1["Draft#1"]',
        '    n2["check #quot;style#quot;"]',
        '  end',
        '  start((start)) --> n1',
        '  n1 --> n2',
        '  n2 -->|"revise"| n1',
      ].join('\n'),
    );
  });

  it('nests each inner flow as a subgraph and links flows by their actions', () => {
    const inner = new Flow(new Chunks({ name: 'chunks' }), { name: 'per-doc' });
    const fan = new ParallelBatchFlow(inner, { name: 'docs' });
    const publish = new Publish({ name: 'publish' });
    fan.on('done', publish);
    const outer = new Flow(fan, { name: 'outer' });
    expect(toMermaid(outer, { direction: 'LR' })).toBe(
      [
        'flowchart LR',
        '  subgraph n0["outer (flow)"]',
        '    subgraph n1["docs (parallel-batch-flow)"]',
        '      subgraph n2["per-doc (flow)"]',
        '        n3["chunks (batch-node)"]',
        '      end',
        '    end',
        '    n4["publish"]',
        '  end',
        '  start((start)) --> n1',
        '  n1 -->|"done"| n4',
      ].join('\n'),
    );
  });

  it('writes markup, backticks and entity-like text in names and actions as entity codes, so labels are text', () => {
    const markup = defineFlow('markup', () => {
      const first = new Draft({ name: '<img src=x onerror=alert(1)>' });
      first.on('<i>go</i> & `md`', new Check({ name: 'a #lt; b' }));
      return new Flow(first);
    });
    expect(toMermaid(markup).split('\n').slice(2)).toEqual([
      '    n1["#lt;img src=x onerror=alert(1)#gt;"]',
      '    n2["a #35;lt; b"]',
      '  end',
      '  start((start)) --> n1',
      '  n1 -->|"#lt;i#gt;go#lt;/i#gt; #amp; #96;md#96;"| n2',
    ]);
  });

  it('labels an unnamed root with the flow name', () => {
    const definition = defineFlow('greeting', () => new Flow(new Draft({ name: 'draft' })));
    expect(toMermaid(definition).split('\n').slice(0, 3)).toEqual([
      'flowchart TD',
      '  subgraph n0["greeting (flow)"]',
      '    n1["draft"]',
    ]);
  });

  it('names the bad argument', () => {
    expect(() => toMermaid({} as never)).toThrow(/toMermaid: expected `flow` to be a FlowDefinition or a node/);
    expect(() => toMermaid(new Draft(), { direction: 'BT' as never })).toThrow(
      /expected `direction` to be 'TD' or 'LR', got `'BT'`/,
    );
  });
});
