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

  it('says nothing for nodes without limits', async () => {
    await new Flow(new Node({ name: 'plain' })).run({});
    expect(warnings).toEqual([]);
  });
});
