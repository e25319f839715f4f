import type { RunStatus } from '../api/types';

/** A run's status as a coloured label (the colour repeats the word: it never stands alone). */
export function StatusBadge({ status }: { status: RunStatus }) {
  return <span class={`badge status-${status}`}>{status}</span>;
}
