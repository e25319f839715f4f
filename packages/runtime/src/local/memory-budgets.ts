import type { BudgetHold, BudgetKeyInfo, BudgetReply, BudgetRequest, BudgetState } from '../kernel/budget-store.js';
import type { Clock } from '../kernel/clock.js';

/** One budget key in memory: what the Redis store keeps in its four keys per budget. */
interface MemoryBudget {
  /** Admissions in the sliding window: holder → [admitted at (epoch ms), units]. */
  window: Map<string, { at: number; units: number }>;
  /** Concurrency leases: holder → expiry (epoch ms; Infinity: until given back). */
  leases: Map<string, number>;
  /**
   * Waiters: task id → { score (priority, then arrival), until (epoch ms it counts), woken (named
   * among wakes since its last refusal) }.
   */
  waiters: Map<string, { score: number; until: number; woken: boolean }>;
  /** Epoch ms until which nobody is admitted (a RateLimitedError). */
  heldUntil: number;
  /** Arrivals so far (the FIFO order of waiters). */
  seq: number;
  /** The longest window any limit on this key asked for, in ms (how long entries are kept). */
  perMs: number;
  /** The last `concurrency` asked on this key (how many waiters a release wakes). */
  concurrency: number;
  /** The limits the last visit asked of this key, and when (epoch ms), for `Engine.budgets`. */
  asked?: { concurrency?: number; rate?: { max: number; perMs: number }; at: number };
}

/** Budget keys idle this long (ms) are not listed (as on Redis, where they expire). */
const BUDGET_IDLE_MS = 86_400_000;

/** A waiter counts this long past the moment it said it would look again, in ms. */
const WAITER_GRACE_MS = 30_000;
/** Most waiters an admission wakes unless the request says (BudgetRequest.wakeMax). */
const DEFAULT_WAKE_MAX = 32;
/** Arrivals a priority step spans in a waiter's score (BullMQ-like: priority first, then FIFO). */
const PRIORITY_SPAN = 2 ** 40;

/**
 * The budget operations of {@link MemoryRunStore} (flow control), on the injected clock: the
 * same transitions as the Redis store's `acquire-budget.lua` and `budget-ops.lua`, in maps.
 */
export class MemoryBudgets {
  private readonly budgets = new Map<string, MemoryBudget>();

  constructor(
    private readonly clock: Clock,
    /** A run admitted here goes from `throttled` back to `running`. */
    private readonly onAdmitted: (runId: string) => void,
  ) {}

  acquire(request: BudgetRequest): BudgetReply {
    const now = this.clock.now();
    const wakes: string[] = [];
    for (const limit of request.limits) {
      const budget = this.budget(limit.key);
      if (limit.rate) budget.perMs = Math.max(budget.perMs, limit.rate.perMs);
      budget.asked = {
        ...(limit.concurrency === undefined ? {} : { concurrency: limit.concurrency }),
        ...(limit.rate === undefined ? {} : { rate: { ...limit.rate } }),
        at: now,
      };
      this.expire(budget, now);
      // A waiter gets in when the budget has room for it and for every waiter before it (FIFO).
      const ahead = this.aheadOf(budget, request.waiter);
      let delayMs: number | undefined;
      if (budget.heldUntil > now) delayMs = budget.heldUntil - now;
      else {
        if (limit.concurrency !== undefined && budget.leases.size + ahead >= limit.concurrency) {
          const expiry = Math.min(...budget.leases.values());
          delayMs = expiry < now + request.recheckMs ? Math.max(1, expiry - now) : request.recheckMs;
        }
        if (limit.rate) {
          // This try's units after those of the waiters before it (a try over max needs an empty window).
          const need = Math.min(limit.rate.max, limit.units * (ahead + 1));
          const wait = rateDelay(budget, limit.rate, need, now);
          if (wait !== undefined && (delayMs === undefined || wait > delayMs)) delayMs = wait;
        }
      }
      if (delayMs === undefined) continue;
      // Refused by this key: wait in its queue (keeping an earlier place), and in no other.
      for (const other of request.limits) {
        if (other.key === limit.key) continue;
        const queue = this.budgets.get(other.key);
        if (queue?.waiters.delete(request.waiter)) this.wakeHead(queue, wakes);
      }
      const wait = Math.max(1, Math.min(delayMs, request.recheckMs));
      const place = budget.waiters.get(request.waiter);
      budget.waiters.set(request.waiter, {
        score: place?.score ?? (request.priority ?? 0) * PRIORITY_SPAN + budget.seq++,
        until: now + wait + WAITER_GRACE_MS,
        woken: false,
      });
      return { admitted: false, key: limit.key, delayMs: wait, wakes };
    }
    for (const limit of request.limits) {
      const budget = this.budget(limit.key);
      budget.waiters.delete(request.waiter);
      if (limit.concurrency !== undefined) budget.concurrency = limit.concurrency;
      if (limit.concurrency !== undefined)
        budget.leases.set(request.holder, request.leaseMs === undefined ? Infinity : now + request.leaseMs);
      if (limit.rate) budget.window.set(request.holder, { at: now, units: limit.units });
      // The waiters the budget may now have room for go on (each checks again).
      let room = request.wakeMax ?? DEFAULT_WAKE_MAX;
      if (limit.concurrency !== undefined) room = Math.min(room, limit.concurrency - budget.leases.size);
      if (limit.rate && limit.units > 0)
        room = Math.min(room, Math.floor((limit.rate.max - unitsIn(budget, limit.rate.perMs, now)) / limit.units));
      this.wakeFirst(budget, room, wakes);
    }
    if (request.runId !== undefined) this.onAdmitted(request.runId);
    return { admitted: true, at: now, wakes };
  }

  release(holds: readonly BudgetHold[]): { wakes: string[] } {
    const wakes: string[] = [];
    for (const { key, holder } of holds) {
      const budget = this.budgets.get(key);
      // As many waiters as there are free slots now (at least the first).
      if (budget?.leases.delete(holder))
        this.wakeFirst(budget, Math.max(1, budget.concurrency - budget.leases.size), wakes);
    }
    return { wakes };
  }

  spend({ key, holder }: BudgetHold, units: number): void {
    const budget = this.budget(key);
    const entry = budget.window.get(holder);
    budget.window.set(holder, { at: entry?.at ?? this.clock.now(), units });
  }

  hold(keys: readonly string[], forMs: number): void {
    const until = this.clock.now() + forMs;
    for (const key of keys) {
      const budget = this.budget(key);
      budget.heldUntil = Math.max(budget.heldUntil, until);
    }
  }

  renew(holds: readonly BudgetHold[], leaseMs: number): void {
    const until = this.clock.now() + leaseMs;
    for (const { key, holder } of holds) {
      const leases = this.budgets.get(key)?.leases;
      if (leases?.has(holder)) leases.set(holder, until);
    }
  }

  woken(key: string, waiter: string): boolean {
    const place = this.budgets.get(key)?.waiters.get(waiter);
    if (!place?.woken) return false;
    place.woken = false;
    return true;
  }

  state(key: string, perMs: number): BudgetState {
    const now = this.clock.now();
    const budget = this.budgets.get(key);
    if (!budget) return { leases: 0, unitsInWindow: 0, waiters: [] };
    this.expire(budget, now);
    return {
      leases: budget.leases.size,
      unitsInWindow: unitsIn(budget, perMs, now),
      waiters: this.ordered(budget),
      ...(budget.heldUntil > now ? { heldUntil: budget.heldUntil } : {}),
    };
  }

  /** The keys visits drew from or waited for within {@link BUDGET_IDLE_MS}. */
  keys(): BudgetKeyInfo[] {
    const since = this.clock.now() - BUDGET_IDLE_MS;
    const keys: BudgetKeyInfo[] = [];
    for (const [key, { asked }] of this.budgets) {
      if (!asked || asked.at <= since) continue;
      const { at, ...limits } = asked;
      keys.push({ key, ...limits, usedAt: at });
    }
    return keys;
  }

  private budget(key: string): MemoryBudget {
    let budget = this.budgets.get(key);
    if (!budget) {
      budget = {
        window: new Map(),
        leases: new Map(),
        waiters: new Map(),
        heldUntil: 0,
        seq: 0,
        perMs: 0,
        concurrency: 1,
      };
      this.budgets.set(key, budget);
    }
    return budget;
  }

  /** Drops window entries older than the longest window, expired leases and lapsed waiters. */
  private expire(budget: MemoryBudget, now: number): void {
    for (const [holder, entry] of budget.window) if (entry.at <= now - budget.perMs) budget.window.delete(holder);
    for (const [holder, until] of budget.leases) if (until <= now) budget.leases.delete(holder);
    for (const [waiter, place] of budget.waiters) if (place.until <= now) budget.waiters.delete(waiter);
  }

  /** Waiters, first first (lowest score). */
  private ordered(budget: MemoryBudget): string[] {
    return [...budget.waiters.entries()].sort((a, b) => a[1].score - b[1].score).map(([waiter]) => waiter);
  }

  /** How many waiters are before `waiter` (all of them when it is not queued). */
  private aheadOf(budget: MemoryBudget, waiter: string): number {
    const place = budget.waiters.get(waiter);
    if (!place) return budget.waiters.size;
    let ahead = 0;
    for (const other of budget.waiters.values()) if (other.score < place.score) ahead++;
    return ahead;
  }

  /** Names the first `count` waiters among `wakes`, marking each woken. */
  private wakeFirst(budget: MemoryBudget, count: number, wakes: string[]): void {
    for (const waiter of this.ordered(budget).slice(0, Math.max(0, count))) {
      budget.waiters.get(waiter)!.woken = true;
      if (!wakes.includes(waiter)) wakes.push(waiter);
    }
  }

  private wakeHead(budget: MemoryBudget, wakes: string[]): void {
    this.wakeFirst(budget, 1, wakes);
  }
}

/** Units admitted in the sliding window of `perMs` ending at `now`. */
function unitsIn(budget: MemoryBudget, perMs: number, now: number): number {
  let units = 0;
  for (const entry of budget.window.values()) if (entry.at > now - perMs) units += entry.units;
  return units;
}

/** How long until `need` more units fit in a window of `rate.max` per `rate.perMs`, or `undefined` when they fit now. */
function rateDelay(
  budget: MemoryBudget,
  rate: { max: number; perMs: number },
  need: number,
  now: number,
): number | undefined {
  const entries = [...budget.window.values()].filter((e) => e.at > now - rate.perMs).sort((a, b) => a.at - b.at);
  let used = entries.reduce((sum, e) => sum + e.units, 0);
  const allowed = rate.max - need;
  if (used <= allowed) return undefined;
  for (const entry of entries) {
    used -= entry.units;
    if (used <= allowed) return entry.at + rate.perMs - now;
  }
  return rate.perMs;
}
