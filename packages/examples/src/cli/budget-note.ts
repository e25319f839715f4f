import type { BudgetInfo } from '@queueflow/runtime';

/**
 * What the progress line says of the budgets that hold runs back (visits waiting for them), e.g.
 * `throttled by 'llm': 60 per 61.5 s, 2 at once (12 waiting)`; empty when none does.
 */
export function budgetNote(budgets: readonly BudgetInfo[]): string {
  const notes = budgets
    .filter((budget) => budget.waiting.length > 0 || (budget.heldUntil ?? 0) > Date.now())
    .map((budget) => {
      const limits = [
        ...(budget.rate ? [`${budget.rate.max} per ${seconds(budget.rate.perMs)}`] : []),
        ...(budget.concurrency === undefined ? [] : [`${budget.concurrency} at once`]),
        ...((budget.heldUntil ?? 0) > Date.now() ? ['held back by a 429'] : []),
      ];
      return `throttled by '${budget.key}': ${limits.join(', ')} (${budget.waiting.length} waiting)`;
    });
  return notes.join('; ');
}

/** `61450` → `61.5 s`, `60000` → `60 s`. */
function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}
