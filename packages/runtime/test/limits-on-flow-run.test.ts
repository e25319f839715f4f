import { beforeEach, describe, expect, it } from 'vitest';
import { Flow, Node, setWarningHandler } from '../src/index.js';

describe('flow.run and limits', () => {
  const warnings: string[] = [];
  beforeEach(() => {
    warnings.length = 0;
    setWarningHandler((code, message) => warnings.push(`${code}: ${message}`));
  });

  it('warns once per node that it does not keep the budgets of limits', async () => {
    class Calls extends Node {
      override exec(): string {
        return 'called';
      }
    }
    const node = new Calls({ name: 'calls-model', limits: [{ key: 'model', concurrency: 1 }] });
    const flow = new Flow(node);
    await flow.run({});
    await flow.run({});
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^QF_LIMITS_IGNORED: flow\.run does not enforce the limits of node 'calls-model'/);
  });

  it('says nothing until a try that a limit applies to (its `when`)', async () => {
    class Sometimes extends Node {
      override prep(): boolean {
        return this.params.llm === true;
      }
      override exec(): string {
        return 'called';
      }
    }
    const limits = [{ key: 'model', concurrency: 1, when: (llm: boolean) => llm }];
    const flow = new Flow(new Sometimes({ name: 'sometimes-model', limits }));
    await flow.run({});
    expect(warnings).toEqual([]);
    flow.setParams({ llm: true });
    await flow.run({});
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^QF_LIMITS_IGNORED: .*'sometimes-model'/);
  });

  it('refuses a `when` that is not a function, naming it', () => {
    expect(() => new Node({ limits: [{ key: 'k', concurrency: 1, when: true as never }] })).toThrow(
      /expected `limits\[0\]\.when` to be a function/,
    );
  });

  it('says nothing for nodes without limits', async () => {
    await new Flow(new Node({ name: 'plain' })).run({});
    expect(warnings).toEqual([]);
  });
});
