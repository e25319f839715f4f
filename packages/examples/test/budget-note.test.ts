import type { BudgetInfo } from '@queueflow/runtime';
import { describe, expect, it } from 'vitest';
import { budgetNote } from '../src/cli/budget-note.js';

const llm: BudgetInfo = {
  key: 'llm',
  inUse: 2,
  concurrency: 2,
  unitsInWindow: 60,
  rate: { max: 60, perMs: 61_450 },
  waiting: ['a', 'b', 'c'],
  usedAt: 0,
};

describe('the progress line on budgets', () => {
  it('names a budget that holds runs back, with its limits and how many wait', () => {
    expect(budgetNote([llm])).toBe("throttled by 'llm': 60 per 61.5 s, 2 at once (3 waiting)");
  });

  it('says nothing of budgets nobody waits for', () => {
    expect(budgetNote([{ ...llm, waiting: [] }])).toBe('');
    expect(budgetNote([])).toBe('');
  });
});
