import { ago, dateTime } from './format';

/**
 * A time as "3 min ago" (or "in 5 min" for a time to come), with the full date and time on hover
 * and for machines. A past time a little ahead of this browser's clock (times set on the Redis
 * server's clock) reads "now", not "in 1 sec".
 */
export function TimeAgo({ at, now, future = false }: { at: number | undefined; now: number; future?: boolean }) {
  if (at === undefined) return <span class="muted">—</span>;
  return (
    <time dateTime={new Date(at).toISOString()} title={dateTime(at)}>
      {ago(future ? at : Math.min(at, now), now)}
    </time>
  );
}
