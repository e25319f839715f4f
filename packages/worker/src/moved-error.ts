/** Whether `error` is a cluster's redirection (`MOVED 9355 10.0.0.2:6379`) that a single-server connection cannot follow. */
export function isMovedError(error: unknown): boolean {
  return /^MOVED \d+ /.test((error as { message?: unknown } | null)?.message as string);
}
