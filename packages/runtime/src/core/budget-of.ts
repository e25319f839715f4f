import type { StepBudgetPort } from '../interpreter/step-types.js';

const BUDGET = Symbol.for('queueflow.budget');

/** What a per-visit copy spends through: its try's admission, and the keys it was admitted on. */
export interface AttachedBudget {
  readonly port: StepBudgetPort;
  readonly keys: readonly string[];
}

/** Gives a per-visit copy the admission of its try of `exec` (engines do this, as with the stream). */
export function attachBudget(node: object, budget: AttachedBudget): void {
  (node as Record<symbol, AttachedBudget>)[BUDGET] = budget;
}

/** The admission attached to `node`, if an engine runs it under `limits`. */
export function budgetOf(node: object): AttachedBudget | undefined {
  return (node as Record<symbol, AttachedBudget | undefined>)[BUDGET];
}
