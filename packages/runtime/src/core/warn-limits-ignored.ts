import { limitApplies, type Limit } from './limit.js';
import { warn } from './warnings.js';

/** Names of the nodes with `limits` that `flow.run` has warned about (once each). */
const limitsIgnored = new Set<string>();

/**
 * Budgets are the engines' (they count across runs and workers): `flow.run` (and `node.run`)
 * say once per node name that they skip them, at the first try that one of the node's limits
 * applies to (its `when`), so a node that only sometimes calls a model says nothing until it does.
 */
export function warnIfLimitsIgnored(
  node: { limits: Limit[] | undefined; name?: string | undefined; params: object },
  input: unknown,
): void {
  const name = node.name ?? node.constructor.name;
  if (limitsIgnored.has(name)) return;
  if (!node.limits!.some((limit) => limitApplies(limit, input, node.params, name))) return;
  limitsIgnored.add(name);
  warn(
    'QF_LIMITS_IGNORED',
    `flow.run does not enforce the limits of node '${name}' (rate and concurrency budgets are kept by LocalEngine and RedisEngine): run the flow on an engine to keep them`,
  );
}
