/**
 * The budget operations of the {@link RunStore} contract (flow control, DESIGN "Flow control"):
 * the types they take and answer. Each operation is one atomic transition on the store's clock
 * (Redis: one Lua script on the server's `TIME`; memory: the injected clock).
 *
 * A budget key has: a sliding window of admissions (units each) for `rate`; leases (one per
 * admitted visit, expiring unless renewed) for `concurrency`; a hold (`RateLimitedError`) until
 * which nobody is admitted; and a FIFO queue of waiters (task ids, lower `priority` first), so a
 * visit that came later never overtakes one that waits.
 */

/** One limit of a visit, resolved: its key and the units one try takes. */
export interface BudgetLimit {
  key: string;
  /** Most leases held at once. */
  concurrency?: number | undefined;
  /** At most `max` units per sliding window of `perMs` ms. */
  rate?: { max: number; perMs: number } | undefined;
  /** Units this try takes from `rate` (1 unless the limit has a `cost`). */
  units: number;
}

/** What {@link RunStore.acquireBudget} takes. */
export interface BudgetRequest {
  /** Names this admission: its leases and window entries (unique per try). */
  holder: string;
  /** The task id of the visit: promoted (woken) when its turn comes. */
  waiter: string;
  /** The run whose status goes back from `throttled` to `running` when admitted (steps only). */
  runId?: string | undefined;
  /** Lower first among waiters (BullMQ's meaning: 1 is highest; 0 or none before every priority). */
  priority?: number | undefined;
  /** How long a concurrency lease lasts unless renewed, in ms; `undefined`: until released. */
  leaseMs?: number | undefined;
  /** Longest a waiter sleeps before it looks again, in ms (a safety net for a lost wake). */
  recheckMs: number;
  /** Most waiters an admission wakes (those the budget may now have room for). @defaultValue 32 */
  wakeMax?: number | undefined;
  limits: readonly BudgetLimit[];
}

/**
 * What {@link RunStore.acquireBudget} did: admitted at `at` (the store's clock, epoch ms: leases
 * taken, units counted), or refused by `key`, to try again in `delayMs` (or when woken); `wakes`
 * are waiter task ids to promote.
 */
export type BudgetReply =
  { admitted: true; at: number; wakes: string[] } | { admitted: false; key: string; delayMs: number; wakes: string[] };

/** A lease or window entry: the holder that took it on a key. */
export interface BudgetHold {
  key: string;
  holder: string;
}

/** A budget key the store knows: the limits the last visit that drew from it asked, and when. */
export interface BudgetKeyInfo {
  key: string;
  concurrency?: number;
  rate?: { max: number; perMs: number };
  /** Epoch ms of the last admission or refusal on the key. */
  usedAt: number;
}

/** A key's budget as the store holds it now (for inspection and tests). */
export interface BudgetState {
  /** Leases held now (expired ones not counted). */
  leases: number;
  /** Units in the sliding window of `perMs` ms ending now. */
  unitsInWindow: number;
  /** Waiters, first first. */
  waiters: string[];
  /** Epoch ms until which the key is held back (a `RateLimitedError`), if it is. */
  heldUntil?: number;
}
