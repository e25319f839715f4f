import { count } from './format';

export interface PagerProps {
  /** What the rows are, for labels: "runs", "children". */
  what: string;
  offset: number;
  limit: number;
  shown: number;
  hasMore: boolean;
  total?: number | undefined;
  onPage: (offset: number) => void;
}

/** Previous / next page buttons and where this page is. */
export function Pager({ what, offset, limit, shown, hasMore, total, onPage }: PagerProps) {
  const first = shown === 0 ? 0 : offset + 1;
  const last = offset + shown;
  const lastOffset = total !== undefined && total > 0 ? Math.floor((total - 1) / limit) * limit : undefined;
  return (
    <nav class="pager" aria-label={`Pages of ${what}`}>
      <button type="button" onClick={() => onPage(0)} disabled={offset === 0}>
        First
      </button>
      <button type="button" onClick={() => onPage(Math.max(0, offset - limit))} disabled={offset === 0}>
        Previous
      </button>
      <span class="pager-position" aria-live="polite">
        {count(first)}–{count(last)}
        {total !== undefined ? ` of ${count(total)}` : hasMore ? ' of more' : ''} {what}
      </span>
      <button type="button" onClick={() => onPage(offset + limit)} disabled={!hasMore}>
        Next
      </button>
      {lastOffset !== undefined && (
        <button type="button" onClick={() => onPage(lastOffset)} disabled={!hasMore || offset >= lastOffset}>
          Last
        </button>
      )}
    </nav>
  );
}
