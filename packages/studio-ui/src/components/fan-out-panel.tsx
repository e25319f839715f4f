import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { useChildren } from '../api/queries';
import { RUN_STATUSES, type RunInfo, type RunStatus } from '../api/types';
import { count, duration } from './format';
import { Pager } from './pager';
import { Problem } from './problem';
import { StatusBadge } from './status-badge';

const PAGE_SIZES = [100, 250, 500];

/**
 * A fan-out: progress, the merge conflicts, and its children a page at a time (a 2,000-child
 * fan-out stays as quick as a 100-child one: only one page is ever in the page).
 */
export function FanOutPanel({ run }: { run: RunInfo }) {
  const [offset, setOffset] = useState(0);
  const [limit, setLimit] = useState(PAGE_SIZES[0]!);
  const [status, setStatus] = useState<RunStatus | undefined>();
  const children = useChildren(run.id, offset, limit, true, status);
  const progress = run.children;
  const page = children.data;
  if (!progress && page && page.children.length === 0 && offset === 0 && run.conflicts.length === 0) return null;
  return (
    <section class="panel" aria-labelledby="fan-out-title">
      <h2 id="fan-out-title">Fan-out</h2>
      {progress && (
        <div class="progress-line">
          <progress max={progress.total} value={progress.ended} aria-label="Children ended" />
          <span data-testid="fan-out-progress">
            {count(progress.ended)} of {count(progress.total)} children ended
            {progress.failed > 0 && <span class="status-text-failed">, {count(progress.failed)} failed</span>}
          </span>
        </div>
      )}
      {run.conflicts.length > 0 && (
        <>
          <h3>Merge conflicts</h3>
          <p class="muted small">
            Paths two or more children wrote; the writes applied in parameter-set order, so the last one listed won.
          </p>
          <table class="compact" aria-label="Merge conflicts">
            <thead>
              <tr>
                <th scope="col">Path</th>
                <th scope="col">Children, in the order applied</th>
              </tr>
            </thead>
            <tbody>
              {run.conflicts.map((conflict) => (
                <tr key={conflict.path}>
                  <td>
                    <code>{conflict.path}</code>
                  </td>
                  <td>{conflict.children.join(' → ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <div class="toolbar">
        <h3>Children</h3>
        {page?.counts && (
          <div class="filters" role="group" aria-label="Filter children by status">
            <button
              type="button"
              class="filter"
              aria-pressed={!status}
              onClick={() => (setStatus(undefined), setOffset(0))}
            >
              all <span class="count">{count(Object.values(page.counts).reduce((a, b) => a + b, 0))}</span>
            </button>
            {RUN_STATUSES.filter((s) => page.counts![s] > 0 || s === status).map((s) => (
              <button
                key={s}
                type="button"
                class={`filter filter-${s}`}
                aria-pressed={status === s}
                onClick={() => (setStatus(status === s ? undefined : s), setOffset(0))}
              >
                {s}{' '}
                <span class="count" data-testid={`child-count-${s}`}>
                  {count(page.counts![s])}
                </span>
              </button>
            ))}
          </div>
        )}
        <label>
          Per page{' '}
          <select value={limit} onChange={(event) => (setLimit(Number(event.currentTarget.value)), setOffset(0))}>
            {PAGE_SIZES.map((size) => (
              <option key={size} value={size}>
                {size}
              </option>
            ))}
          </select>
        </label>
      </div>
      {children.error ? (
        <Problem error={children.error} what="the children" />
      ) : !page ? (
        <p class="muted">Loading the children…</p>
      ) : page.children.length === 0 && page.offset === 0 ? (
        <p class="muted" data-testid="children-none">
          The engine lists no children for this run now.
        </p>
      ) : (
        <>
          <div class="table-wrap children-grid">
            <table class="compact" aria-label="Children of the fan-out" data-testid="children-grid">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Status</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Run</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {page.children.map((child) => (
                  <tr key={child.index} class={`row-${child.status}`}>
                    <td>{child.index}</td>
                    <td>
                      <StatusBadge status={child.status} />
                    </td>
                    <td>
                      {child.startedAt !== undefined && child.finishedAt !== undefined
                        ? duration(child.finishedAt - child.startedAt)
                        : '—'}
                    </td>
                    <td>
                      {child.runId ? (
                        <Link href={`/runs/${child.runId}`}>{child.runId}</Link>
                      ) : (
                        <span class="muted">item</span>
                      )}
                    </td>
                    <td class="error-cell">
                      {child.error ? `${child.error.code ? `${child.error.code}: ` : ''}${child.error.message}` : ''}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager
            what="children"
            offset={page.offset}
            limit={page.limit}
            shown={page.children.length}
            hasMore={page.hasMore}
            total={status && page.counts ? page.counts[status] : progress?.total}
            onPage={setOffset}
          />
        </>
      )}
    </section>
  );
}
