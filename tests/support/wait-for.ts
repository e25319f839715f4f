/**
 * Resolves once `condition` returns a truthy value, checking every `intervalMs`. For states
 * that no event announces (a run's step counter, a file another process writes).
 *
 * @throws Error naming `what` after `timeoutMs`.
 */
export async function waitFor<T>(
  what: string,
  condition: () => T | Promise<T>,
  { timeoutMs = 30_000, intervalMs = 20 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
