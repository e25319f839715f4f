/**
 * A log of errors that repeat: while Redis is down, ioredis reports every reconnect attempt (many a
 * second). The first of a kind is printed; the same message again within `windowMs` is only
 * counted, and the count is printed with the next one let through.
 *
 * @param print - where a line goes (e.g. `console.error`)
 * @param windowMs - how long the same message stays quiet after it was printed, in ms
 */
export function throttledLog(print: (line: string) => void, windowMs: number): (message: string) => void {
  const lastPrinted = new Map<string, { at: number; quiet: number }>();
  return (message) => {
    const now = Date.now();
    const seen = lastPrinted.get(message);
    if (seen && now - seen.at < windowMs) {
      seen.quiet += 1;
      return;
    }
    const repeats =
      seen && seen.quiet > 0 ? ` (${seen.quiet} more times in ${Math.round((now - seen.at) / 1000)} s)` : '';
    print(`${message}${repeats}`);
    lastPrinted.set(message, { at: now, quiet: 0 });
  };
}
