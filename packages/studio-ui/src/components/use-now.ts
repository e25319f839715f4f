import { useEffect, useState } from 'preact/hooks';

/** The time now, renewed every `everyMs` (for "3 min ago"): a clock on the page, no requests. */
export function useNow(everyMs = 10_000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}
