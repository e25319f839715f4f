import type { Limit } from '@queueflow/runtime';

/** The budget key every model call of the examples draws from. */
export const LLM_BUDGET_KEY = 'llm';

/** A model provider's quota, as the examples' nodes respect it. */
export interface LlmQuota {
  /** Requests per window. */
  requests: number;
  /** The provider's window, in ms. */
  perMs: number;
  /** Requests at once. */
  concurrent: number;
}

/** The quota of OpenAI's lowest tier for many models, and what the mock server enforces by default. */
export const DEFAULT_LLM_QUOTA: LlmQuota = { requests: 60, perMs: 60_000, concurrent: 2 };

/**
 * The node `limits` that keep every worker together within `quota`: one key, `concurrency` as
 * the provider allows, `rate` over a window a little longer than the provider's (2 % + 250 ms),
 * because a request reaches the provider a few milliseconds after queueflow admits it and the two
 * clocks count from those two moments.
 */
export function llmLimits(quota: LlmQuota): Limit[] {
  return [
    {
      key: LLM_BUDGET_KEY,
      concurrency: quota.concurrent,
      rate: { max: quota.requests, perMs: Math.ceil(quota.perMs * 1.02) + 250 },
    },
  ];
}

/**
 * The limits from the environment of the process that builds the graph (clients and workers
 * alike): {@link llmLimits} of `QF_LLM_QUOTA` (see {@link quotaFromEnv}), or none with
 * `QF_LLM_QUOTA=off` (to see the 429s a run would get without flow control).
 *
 * @throws TypeError naming the variable and its value when it is malformed.
 */
export function llmLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): Limit[] | undefined {
  if (env.QF_LLM_QUOTA === 'off') return undefined;
  return llmLimits(quotaFromEnv(env));
}

/**
 * The provider's quota from `QF_LLM_QUOTA=<requests>/<ms>/<concurrent>` (default `60/60000/2`;
 * `off` reads as the default: it turns the limits off, not the quota).
 *
 * @throws TypeError naming the variable and its value when it is neither `off` nor three positive integers.
 */
export function quotaFromEnv(env: NodeJS.ProcessEnv = process.env): LlmQuota {
  const value = env.QF_LLM_QUOTA;
  if (value === undefined || value === '' || value === 'off') return DEFAULT_LLM_QUOTA;
  const parts = value.split('/').map(Number);
  if (parts.length !== 3 || !parts.every((n) => Number.isInteger(n) && n >= 1)) {
    throw new TypeError(
      `QF_LLM_QUOTA: expected 'off' or <requests>/<window ms>/<concurrent> (e.g. 60/60000/2), got '${value}'`,
    );
  }
  const [requests, perMs, concurrent] = parts as [number, number, number];
  return { requests, perMs, concurrent };
}
