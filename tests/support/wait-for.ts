import type { Engine, RunInfo } from '@queueflow/runtime';

/**
 * Resolves once `condition` returns a truthy value, checking every `intervalMs`. For states
 * that no event announces (a run's step counter, a file another process writes). The default
 * deadline is generous: only a failing test waits that long, and a loaded machine must fail none.
 *
 * @throws Error naming `what` after `timeoutMs`.
 */
export async function waitFor<T>(
  what: string,
  condition: () => T | Promise<T>,
  { timeoutMs = 60_000, intervalMs = 20 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Polls `engine.get(runId)` until `condition` holds; returns that info. */
export function untilRun(
  engine: Pick<Engine, 'get'>,
  runId: string,
  what: string,
  condition: (info: RunInfo) => boolean,
  timeoutMs = 60_000,
): Promise<RunInfo> {
  return waitFor(
    what,
    async () => {
      const info = await engine.get(runId);
      return info && condition(info) ? info : undefined;
    },
    { timeoutMs },
  );
}

/**
 * Waits for `promise`, or rejects with `message` after `ms` real milliseconds. Only the failure
 * path waits: used where a broken rule would otherwise hang a test (a run that never ends, work
 * that should overlap but runs one at a time).
 */
export async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
