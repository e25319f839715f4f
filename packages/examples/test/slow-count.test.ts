/**
 * The root README's walk-through flow (`slow-count`), with no delay: it counts every number once
 * and ends on its final node, with no warning, on `flow.run` and on the LocalEngine.
 */
import { LocalEngine, setWarningHandler, type WarningCode } from '@queueflow/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { slowCount } from '../src/tutorial/slow-count.js';

describe('slow-count (the README walk-through flow)', () => {
  const warnings: string[] = [];
  const record = (code: WarningCode, message: string): void => void warnings.push(`${code}: ${message}`);
  afterEach(() => {
    setWarningHandler(null);
    warnings.length = 0;
  });

  const expected = (pid: number) => ({
    target: 4,
    counted: [1, 2, 3, 4].map((n) => ({ n, pid })),
    finishedBy: pid,
  });

  it('counts to the target and ends on the final node without a warning (flow.run)', async () => {
    setWarningHandler(record);
    const shared = { target: 4 };
    await slowCount.build().setParams({ delayMs: 0 }).run(shared);
    expect(warnings).toEqual([]);
    expect(shared).toEqual(expected(process.pid));
  });

  it('does the same on the LocalEngine', async () => {
    setWarningHandler(record);
    const engine = new LocalEngine({ flows: [slowCount] });
    try {
      const result = await engine.run('slow-count', { target: 4 }, { params: { delayMs: 0 } });
      expect(warnings).toEqual([]);
      expect(result.status).toBe('completed');
      expect(result.shared).toEqual(expected(process.pid));
    } finally {
      await engine.close();
    }
  });
});
