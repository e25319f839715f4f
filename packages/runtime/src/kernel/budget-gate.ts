import type { StepBudgetPort } from '../interpreter/step-types.js';
import { queueflowMetrics } from '../telemetry/metrics.js';
import type { BudgetHold, BudgetLimit } from './budget-store.js';
import type { RunStore } from './run-store.js';
import { newRunId } from './run-id.js';
import type { Scheduler } from './scheduler.js';

/**
 * Longest a visit waiting for a budget sleeps before it looks again, in ms: a safety net only.
 * A waiter is woken when its turn comes (a lease given back, the waiter before it admitted), and
 * the first waiter sleeps exactly until its window or hold allows it.
 */
export const BUDGET_RECHECK_MS = 10_000;

/** Most waiters one admission wakes: those its budget may still have room for, so they get in side by side. */
const BUDGET_WAKE_MAX = 32;

/**
 * The concurrency leases of the tries running in one process (a worker), renewed by its
 * heartbeat: a worker that dies stops renewing, and its leases expire (never a slot lost forever).
 */
export class BudgetLeases {
  private readonly held = new Map<string, readonly BudgetHold[]>();

  /** `onAdded`: told of each admission's leases as they are taken (a worker names them in its beats). */
  constructor(private readonly onAdded?: () => void) {}

  add(holder: string, holds: readonly BudgetHold[]): void {
    if (holds.length === 0) return;
    this.held.set(holder, holds);
    this.onAdded?.();
  }

  delete(holder: string): void {
    this.held.delete(holder);
  }

  /** Every lease held here now. */
  all(): BudgetHold[] {
    return [...this.held.values()].flat();
  }

  /** Every lease held here now, forgotten here (they are to be given back at once). */
  takeAll(): BudgetHold[] {
    const all = this.all();
    this.held.clear();
    return all;
  }
}

export interface BudgetGateOptions {
  /** The task id of the visit (the waiter a wake promotes). */
  waiter: string;
  /** The run whose status shows `throttled` (steps; not fan-out items). */
  runId?: string | undefined;
  /** Lease length, in ms; `undefined`: leases last until given back (one process, LocalEngine). */
  leaseMs?: number | undefined;
  leases: BudgetLeases;
}

/**
 * Flow control for one task (DESIGN "Flow control"): the rule, written once for every engine, of
 * how a try of `exec` takes budget from its node's `limits` and gives it back. The store does the
 * counting atomically; the gate names the admission, keeps its leases renewable, wakes the waiters
 * a release or an admission lets through, and counts the waits (`queueflow.budget.waits`).
 */
export class BudgetGate implements StepBudgetPort {
  /** The admission of the running try: its holder id and keys. */
  private admitted: { holder: string; limits: readonly BudgetLimit[] } | undefined;
  /** `this.spend` calls not yet stored (awaited before the try's leases go back). */
  private readonly spends = new Set<Promise<void>>();
  /** The key that refused the last admission: its wake may come before the task is deferred. */
  private refusedBy: string | undefined;

  constructor(
    private readonly store: RunStore,
    private readonly scheduler: Scheduler,
    private readonly options: BudgetGateOptions,
  ) {}

  async admit(
    node: string,
    limits: readonly BudgetLimit[],
  ): Promise<{ admitted: true } | { admitted: false; key: string; delayMs: number }> {
    const holder = `${this.options.waiter}.${newRunId()}`;
    const reply = await this.store.acquireBudget({
      holder,
      waiter: this.options.waiter,
      runId: this.options.runId,
      leaseMs: this.options.leaseMs,
      recheckMs: BUDGET_RECHECK_MS,
      wakeMax: BUDGET_WAKE_MAX,
      limits,
    });
    await this.scheduler.promote(reply.wakes);
    if (!reply.admitted) {
      this.refusedBy = reply.key;
      queueflowMetrics().budgetWaits.add(1, { 'queueflow.budget': reply.key, 'queueflow.node': node });
      return { admitted: false, key: reply.key, delayMs: Math.max(1, reply.delayMs) };
    }
    this.admitted = { holder, limits };
    this.options.leases.add(holder, this.leasesOf(holder, limits));
    return { admitted: true };
  }

  async release(): Promise<void> {
    const admitted = this.admitted;
    if (!admitted) return;
    this.admitted = undefined;
    await Promise.all(this.spends);
    this.options.leases.delete(admitted.holder);
    const leases = this.leasesOf(admitted.holder, admitted.limits);
    if (leases.length === 0) return;
    const { wakes } = await this.store.releaseBudget(leases);
    await this.scheduler.promote(wakes);
  }

  spend(key: string, units: number): Promise<void> {
    const admitted = this.admitted;
    if (!admitted) return Promise.resolve(); // the try has ended: too late to correct
    const spent = this.store.spendBudget({ key, holder: admitted.holder }, units);
    const tracked = spent.finally(() => this.spends.delete(tracked));
    this.spends.add(tracked);
    return spent;
  }

  /**
   * Whether the key that refused this task woke it since (a release or an admission named it)
   * while the task still ran: its scheduler's promote missed it, and it should run now.
   */
  async woken(): Promise<boolean> {
    if (this.refusedBy === undefined) return false;
    return this.store.budgetWoken(this.refusedBy, this.options.waiter);
  }

  async hold(keys: readonly string[], forMs: number): Promise<void> {
    queueflowMetrics().budgetWaits.add(1, { 'queueflow.budget': keys[0] ?? '' });
    if (keys.length > 0) await this.store.holdBudget(keys, forMs);
  }

  private leasesOf(holder: string, limits: readonly BudgetLimit[]): BudgetHold[] {
    return limits.filter((limit) => limit.concurrency !== undefined).map((limit) => ({ key: limit.key, holder }));
  }
}
