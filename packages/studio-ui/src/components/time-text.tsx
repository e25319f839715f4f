import { ago, dateTime } from './format';

/** A time as "3 min ago", with the full date and time on hover and for machines. */
export function TimeAgo({ at, now }: { at: number | undefined; now: number }) {
  if (at === undefined) return <span class="muted">—</span>;
  return (
    <time dateTime={new Date(at).toISOString()} title={dateTime(at)}>
      {ago(at, now)}
    </time>
  );
}
