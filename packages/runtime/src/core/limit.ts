import { invalidOption } from './validate-options.js';
import { checkWellFormed } from './well-formed.js';

/**
 * A budget a node's visits draw from (flow control, DESIGN "Flow control"). Every node (of any
 * flow) that names the same key shares its budget, across every worker and client of a
 * deployment (a key prefix: see README "Flow control").
 *
 * - `concurrency`: most visits holding the key that run `exec` at once;
 * - `rate`: at most `max` units per sliding window of `perMs` **milliseconds**; a unit is one try
 *   of `exec` by default, or what `cost` estimates (tokens, say), corrected by `this.spend`.
 *
 * A visit that finds no budget waits in the scheduler's delayed set (holding no worker slot and
 * using no try) until the moment its budget allows it; its run shows status `throttled`.
 *
 * - `when`: the limit applies to a try only when it returns true (a node that calls a model only
 *   for some runs draws from the model's budget only then, and never waits for it otherwise).
 *
 * @example
 * ```ts
 * new Summarise({ limits: [{ key: 'openai', concurrency: 2, rate: { max: 60, perMs: 60_000 } }] });
 * new Summarise({ limits: [{ key: (p) => `tenant-${String(p.tenant)}`, rate: { max: 10, perMs: 1000 } }] });
 * // only the tries that call the model: a run with `params.llm` off never waits for 'openai'
 * new Summarise({ limits: [{ key: 'openai', concurrency: 2, when: (_input, p) => p.llm === true }] });
 * ```
 */
export interface Limit {
  /** The budget's name, or a function of the visit's params that names it (a non-empty string). */
  key: string | ((params: any) => string);
  /** Most visits holding this key that run `exec` at once, across all workers. An integer ≥ 1. */
  concurrency?: number;
  /** At most `max` units (an integer ≥ 1) per sliding window of `perMs` milliseconds (an integer ≥ 1). */
  rate?: { max: number; perMs: number };
  /**
   * Units one try of `exec` is expected to take from `rate`, from exec's input (the `prep`
   * result; for a batch node, the item): a finite number ≥ 0. @defaultValue 1
   */
  cost?: (prepRes: any) => number;
  /**
   * Whether this limit applies to a try, from exec's input (the `prep` result; for a batch node,
   * the item) and the visit's params: a try for which it returns false takes nothing from the
   * budget and never waits for it (and `flow.run` does not warn about it). Must be a pure
   * function of its arguments (and of the process's configuration). @defaultValue always
   */
  when?: (prepRes: any, params: any) => boolean;
}

/**
 * Checks a node's `limits` option. @throws TypeError naming the node, the index of the bad
 * limit, the field, what was expected and what was received; QueueflowError `INVALID_OPTION` for
 * a key that is not well-formed Unicode.
 */
export function checkLimits(owner: string, value: unknown): Limit[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalidOption(owner, 'limits', 'an array of limits', value);
  const keys = new Set<string>();
  return value.map((limit: unknown, index) => {
    const at = `limits[${index}]`;
    if (typeof limit !== 'object' || limit === null) throw invalidOption(owner, at, 'an object', limit);
    const { key, concurrency, rate, cost, when } = limit as Record<string, unknown>;
    if (typeof key === 'string') {
      if (key === '') throw invalidOption(owner, `${at}.key`, 'a non-empty string or a function of params', key);
      if (keys.has(key)) throw invalidOption(owner, `${at}.key`, 'a key not named twice by one node', key);
      checkWellFormed(owner, `${at}.key`, key);
      keys.add(key);
    } else if (typeof key !== 'function') {
      throw invalidOption(owner, `${at}.key`, 'a non-empty string or a function of params', key);
    }
    if (concurrency !== undefined && !(Number.isInteger(concurrency) && (concurrency as number) >= 1))
      throw invalidOption(owner, `${at}.concurrency`, 'an integer from 1 and up', concurrency);
    if (rate !== undefined) {
      if (typeof rate !== 'object' || rate === null)
        throw invalidOption(owner, `${at}.rate`, 'an object { max, perMs }', rate);
      const { max, perMs } = rate as Record<string, unknown>;
      if (!(Number.isInteger(max) && (max as number) >= 1))
        throw invalidOption(owner, `${at}.rate.max`, 'an integer from 1 and up (units per window)', max);
      if (!(Number.isInteger(perMs) && (perMs as number) >= 1))
        throw invalidOption(owner, `${at}.rate.perMs`, 'an integer from 1 and up (the window, in ms)', perMs);
    }
    if (cost !== undefined && typeof cost !== 'function')
      throw invalidOption(owner, `${at}.cost`, 'a function of the prep result', cost);
    if (when !== undefined && typeof when !== 'function')
      throw invalidOption(owner, `${at}.when`, 'a function of the prep result and params', when);
    if (concurrency === undefined && rate === undefined)
      throw invalidOption(owner, at, 'a limit with `concurrency`, `rate` or both', limit);
    return limit as Limit;
  });
}

/**
 * The key a limit names for a visit with `params`. @throws TypeError when the key function
 * throws or returns anything but a non-empty string; QueueflowError `INVALID_OPTION` for a key
 * that is not well-formed Unicode.
 */
export function limitKeyOf(limit: Limit, params: object, node: string): string {
  if (typeof limit.key === 'string') return limit.key;
  const key: unknown = limit.key(params);
  if (typeof key !== 'string' || key === '')
    throw invalidOption(node, 'limits[].key(params)', 'a non-empty string', key);
  return checkWellFormed(node, 'limits[].key(params)', key);
}

/**
 * Whether `limit` applies to a try of `exec` on `input` with `params` (its `when`, else always).
 * @throws TypeError when `when` returns anything but a boolean.
 */
export function limitApplies(limit: Limit, input: unknown, params: object, node: string): boolean {
  if (!limit.when) return true;
  const applies: unknown = limit.when(input, params);
  if (typeof applies !== 'boolean') throw invalidOption(node, 'limits[].when(prepRes, params)', 'a boolean', applies);
  return applies;
}

/** The units a try of `exec` on `input` takes from the limit's rate. @throws TypeError for a bad cost. */
export function limitCostOf(limit: Limit, input: unknown, node: string): number {
  if (!limit.cost) return 1;
  const units: unknown = limit.cost(input);
  if (typeof units !== 'number' || !Number.isFinite(units) || units < 0)
    throw invalidOption(node, 'limits[].cost(prepRes)', 'a finite number from 0 and up', units);
  return units;
}
