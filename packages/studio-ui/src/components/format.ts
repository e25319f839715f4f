/** Text for times and durations, through the browser's Intl formatters. */

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const number = new Intl.NumberFormat();

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];

/** "3 min. ago" for an epoch-ms time, from `now`. */
export function ago(at: number, now: number): string {
  const delta = at - now;
  for (const [unit, ms] of UNITS)
    if (Math.abs(delta) >= ms || unit === 'second') return relative.format(Math.round(delta / ms), unit);
  return '';
}

/** The full local date and time. */
export function dateTime(at: number): string {
  return absolute.format(at);
}

/** "850 ms", "12.3 s", "4 min 05 s", "2 h 03 min". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** 10000 → "10,000" (in the reader's locale). */
export function count(value: number): string {
  return number.format(value);
}

/**
 * `n` and the word in the number it asks for: `plural(1, 'question')` is `1 question`,
 * `plural(3, 'question')` is `3 questions`, `plural(2, 'child', 'children')` is `2 children`.
 */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}
