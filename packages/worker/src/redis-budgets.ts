import type { BudgetHold, BudgetKeyInfo, BudgetReply, BudgetRequest, BudgetState } from '@queueflow/runtime/kernel';

/** Budget keys idle this long (ms) expire (BUDGET_TTL_MS of budget-lifecycle.lua). */
const BUDGET_TTL_MS = 86_400_000;
import type { Partitions } from './partitions.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * The budget operations of {@link RedisRunStore} (flow control): one Lua script each, on the
 * Redis server's clock (`TIME`), so every worker and client of a prefix counts in one place and
 * no machine's clock skews a window. Contracts: `lua/acquire-budget.lua`, `lua/budget-ops.lua`.
 * Budgets live in partition 0; a run of another partition that a budget admits goes from
 * `throttled` back to `running` in a second script, in its own partition.
 */
export class RedisBudgets {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly partitions: Partitions,
  ) {}

  private get keys(): Partitions['home'] {
    return this.partitions.home;
  }

  async acquire(request: BudgetRequest): Promise<BudgetReply> {
    const { runId } = request;
    const runAtHome = runId !== undefined && this.partitions.indexOf(runId) === 0;
    const keys = [
      // Outside partition 0, a key there that holds no run: resumeRun sets the run's status.
      runAtHome ? this.keys.run(runId) : this.keys.run(''),
      ...request.limits.flatMap((limit) => this.keys.budget(limit.key)),
      this.keys.budgets(),
    ];
    const options = {
      holder: request.holder,
      waiter: request.waiter,
      ...(request.runId === undefined ? {} : { runId: request.runId }),
      ...(request.priority === undefined ? {} : { priority: request.priority }),
      ...(request.leaseMs === undefined ? {} : { leaseMs: request.leaseMs }),
      recheckMs: request.recheckMs,
      wakeMax: request.wakeMax ?? 32,
      changes: this.keys.changes(),
      indexed: true,
      limits: request.limits.map((limit) => ({
        key: limit.key,
        units: limit.units,
        ...(limit.concurrency === undefined ? {} : { concurrency: limit.concurrency }),
        ...(limit.rate === undefined ? {} : { rate: limit.rate }),
      })),
    };
    const reply = (await this.redis.acquireBudget(keys.length, ...keys, JSON.stringify(options))) as
      [1, string[], number] | [0, string, number, string[]];
    if (reply[0] === 1) {
      if (runId !== undefined && !runAtHome) await this.resumeRun(runId, request.holder);
      return { admitted: true, at: Number(reply[2]), wakes: reply[1] };
    }
    return { admitted: false, key: reply[1], delayMs: Number(reply[2]), wakes: reply[3] };
  }

  /** A throttled run outside partition 0 goes back to running: acquire-budget.lua with no limits, in its partition. */
  private async resumeRun(runId: string, holder: string): Promise<void> {
    const keys = this.partitions.of(runId);
    const options = {
      holder,
      waiter: holder,
      runId,
      recheckMs: 0,
      wakeMax: 0,
      changes: this.keys.changes(),
      limits: [],
    };
    await this.redis.acquireBudget(1, keys.run(runId), JSON.stringify(options));
  }

  async release(holds: readonly BudgetHold[]): Promise<{ wakes: string[] }> {
    if (holds.length === 0) return { wakes: [] };
    const wakes = (await this.ops('release', holds, { holds })) as string[];
    return { wakes };
  }

  async spend(hold: BudgetHold, units: number): Promise<void> {
    await this.ops('spend', [hold], { holds: [hold], units });
  }

  async hold(keys: readonly string[], forMs: number): Promise<void> {
    if (keys.length === 0) return;
    await this.ops(
      'hold',
      keys.map((key) => ({ key })),
      { keys, forMs: Math.ceil(forMs) },
    );
  }

  async renew(holds: readonly BudgetHold[], leaseMs: number): Promise<void> {
    if (holds.length === 0) return;
    await this.ops('renew', holds, { holds, leaseMs });
  }

  async woken(key: string, waiter: string): Promise<boolean> {
    return (await this.ops('woken', [{ key }], { keys: [key], waiter })) === 1;
  }

  /** The keys used within the budgets' expiry (a day), with the limits last asked of each. */
  async keysInUse(): Promise<BudgetKeyInfo[]> {
    const since = Date.now() - BUDGET_TTL_MS; // a day: a clock a little off the server's does not matter
    const flat = await this.redis.zrangebyscore(this.keys.budgets(), since, '+inf', 'WITHSCORES');
    const pipeline = this.redis.pipeline();
    const keys: { key: string; usedAt: number }[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      keys.push({ key: flat[i]!, usedAt: Number(flat[i + 1]) });
      pipeline.hget(this.keys.budget(flat[i]!)[1], 'limits');
    }
    const replies = keys.length > 0 ? ((await pipeline.exec()) ?? []) : [];
    return keys.map(({ key, usedAt }, i) => {
      const text = replies[i]?.[1];
      const limits = (typeof text === 'string' ? JSON.parse(text) : {}) as Pick<BudgetKeyInfo, 'concurrency' | 'rate'>;
      return {
        key,
        ...(typeof limits.concurrency === 'number' ? { concurrency: limits.concurrency } : {}),
        ...(limits.rate ? { rate: { max: limits.rate.max, perMs: limits.rate.perMs } } : {}),
        usedAt,
      };
    });
  }

  async state(key: string, perMs: number): Promise<BudgetState> {
    const [leases, units, heldUntil, ...waiters] = (await this.ops('state', [{ key }], { keys: [key], perMs })) as [
      number,
      string,
      number,
      ...string[],
    ];
    return {
      leases: Number(leases),
      unitsInWindow: Number(units),
      waiters,
      ...(Number(heldUntil) > 0 ? { heldUntil: Number(heldUntil) } : {}),
    };
  }

  private ops(op: string, of: readonly { key: string }[], args: object): Promise<unknown> {
    const keys = of.flatMap(({ key }) => this.keys.budget(key));
    return this.redis.budgetOps(keys.length, ...keys, op, JSON.stringify(args));
  }
}
