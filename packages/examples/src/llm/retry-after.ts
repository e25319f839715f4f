import { RateLimitedError } from '@queueflow/runtime';

/**
 * How long a model provider's 429 asks to wait, in ms, from the error the `openai` client threw
 * (`status` 429 and its `retry-after-ms` or `retry-after` header, seconds or an HTTP date), or
 * `undefined` when `error` is not a 429. A 429 without the header waits one second.
 */
export function retryAfterMsOf(error: unknown, now: number = Date.now()): number | undefined {
  const { status, headers } = (error ?? {}) as { status?: unknown; headers?: unknown };
  if (status !== 429) return undefined;
  const header = (name: string): string | null => {
    if (headers instanceof Headers) return headers.get(name);
    const value = (headers as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' ? value : null;
  };
  const ms = Number(header('retry-after-ms'));
  if (header('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return ms;
  const after = header('retry-after');
  if (after === null) return 1000;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? 1000 : Math.max(0, date - now);
}

/**
 * What a node's try throws for an error of the `openai` client: a 429 becomes a
 * `RateLimitedError` (the visit waits the provider's `Retry-After` without using a try, and holds
 * the budget back for everyone); any other error is thrown as it is.
 */
export function modelCallError(error: unknown): unknown {
  const retryAfterMs = retryAfterMsOf(error);
  return retryAfterMs === undefined
    ? error
    : new RateLimitedError(`model quota: ${(error as Error).message}`, { retryAfterMs, cause: error });
}
