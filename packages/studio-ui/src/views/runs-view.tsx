import { useEffect, useState } from 'preact/hooks';
import { Link, useSearchParams } from 'wouter-preact';
import { useCounts, useRuns } from '../api/queries';
import { RUN_STATUSES, type RunStatus } from '../api/types';
import { count } from '../components/format';
import { Pager } from '../components/pager';
import { Problem } from '../components/problem';
import { StatusBadge } from '../components/status-badge';
import { TimeAgo } from '../components/time-text';
import { useNow } from '../components/use-now';
import { useTitle } from '../components/use-title';

const PAGE_SIZES = [25, 50, 100, 200];

/**
 * The runs, newest first, a page at a time, live: counts per status (which filter), a flow
 * filter, search by id. Every choice is in the URL (`?status=failed&flow=qa&q=abc&offset=50`).
 */
export function RunsView() {
  const [params, setParams] = useSearchParams();
  const status = (RUN_STATUSES as readonly string[]).includes(params.get('status') ?? '')
    ? (params.get('status') as RunStatus)
    : undefined;
  const flow = params.get('flow') || undefined;
  const q = params.get('q') || undefined;
  const offset = Math.max(0, Number(params.get('offset')) || 0);
  const limit = PAGE_SIZES.includes(Number(params.get('limit'))) ? Number(params.get('limit')) : 50;
  const runs = useRuns({ status, flow, q, offset, limit });
  const counts = useCounts();
  const now = useNow();
  useTitle(status ? `Runs: ${status}` : 'Runs');
  const [search, setSearch] = useState(q ?? '');
  useEffect(() => setSearch(q ?? ''), [q]);

  const update = (changes: Record<string, string | number | undefined>) =>
    setParams((previous) => {
      const next = new URLSearchParams(previous);
      for (const [key, value] of Object.entries(changes)) {
        if (value === undefined || value === '' || (key === 'offset' && value === 0)) next.delete(key);
        else next.set(key, String(value));
      }
      if (!('offset' in changes)) next.delete('offset');
      return next;
    });

  const scoped = counts.data ? (flow ? counts.data.flows[flow] : counts.data.counts) : undefined;
  const all = scoped ? Object.values(scoped).reduce((a, b) => a + b, 0) : undefined;
  const flows = counts.data ? Object.keys(counts.data.flows).sort() : [];
  if (flow && !flows.includes(flow)) flows.push(flow);

  return (
    <section aria-labelledby="runs-title">
      <div class="view-head">
        <h1 id="runs-title">Runs</h1>
        {counts.data?.capped && (
          <span class="muted small">counts cover the newest {count(counts.data.total)} runs</span>
        )}
      </div>
      <div class="filters" role="group" aria-label="Filter runs by status">
        <button type="button" class="filter" aria-pressed={!status} onClick={() => update({ status: undefined })}>
          all{' '}
          <span class="count" data-testid="count-all">
            {all === undefined ? '…' : count(all)}
          </span>
        </button>
        {RUN_STATUSES.map((s) => (
          <button
            key={s}
            type="button"
            class={`filter filter-${s}`}
            aria-pressed={status === s}
            onClick={() => update({ status: status === s ? undefined : s })}
          >
            {s}{' '}
            <span class="count" data-testid={`count-${s}`}>
              {scoped ? count(scoped[s]) : '…'}
            </span>
          </button>
        ))}
      </div>
      <div class="toolbar">
        <label>
          Flow{' '}
          <select value={flow ?? ''} onChange={(event) => update({ flow: event.currentTarget.value || undefined })}>
            <option value="">every flow</option>
            {flows.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <form
          role="search"
          class="search"
          onSubmit={(event) => {
            event.preventDefault();
            update({ q: search.trim() || undefined });
          }}
        >
          <label for="run-search">Run id</label>
          <input
            id="run-search"
            type="search"
            value={search}
            placeholder="id or part of it"
            onInput={(event) => setSearch(event.currentTarget.value)}
            spellcheck={false}
            autocomplete="off"
          />
          <button type="submit">Search</button>
          {q && (
            <button type="button" onClick={() => update({ q: undefined })}>
              Clear
            </button>
          )}
        </form>
        <label>
          Per page{' '}
          <select value={limit} onChange={(event) => update({ limit: Number(event.currentTarget.value) })}>
            {PAGE_SIZES.map((size) => (
              <option key={size} value={size}>
                {size}
              </option>
            ))}
          </select>
        </label>
      </div>
      {runs.error ? (
        <Problem error={runs.error} what="the runs" />
      ) : !runs.data ? (
        <p class="muted" role="status">
          Loading the runs…
        </p>
      ) : (
        <>
          <div class="table-wrap">
            <table class="runs" aria-label="Runs" aria-busy={runs.isFetching} data-testid="runs-table">
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Flow</th>
                  <th scope="col">Status</th>
                  <th scope="col">Current node</th>
                  <th scope="col" class="num">
                    Steps
                  </th>
                  <th scope="col">Age</th>
                  <th scope="col">Error</th>
                </tr>
              </thead>
              <tbody>
                {runs.data.runs.length === 0 && (
                  <tr>
                    <td colSpan={7} class="muted">
                      {q ? `No run id contains '${q}'.` : 'No runs here yet.'}
                    </td>
                  </tr>
                )}
                {runs.data.runs.map((run) => (
                  <tr key={run.id} data-run-id={run.id}>
                    <td>
                      <Link href={`/runs/${run.id}`} class="run-link">
                        <code>{run.id}</code>
                      </Link>
                      {run.parentId && <span class="tag">child</span>}
                      {run.forkedFrom && <span class="tag">fork</span>}
                    </td>
                    <td>{run.flow}</td>
                    <td>
                      <StatusBadge status={run.status} />
                    </td>
                    <td>{run.currentNode ? <code>{run.currentNode}</code> : <span class="muted">—</span>}</td>
                    <td class="num">{count(run.steps)}</td>
                    <td>
                      <TimeAgo at={run.createdAt} now={now} />
                    </td>
                    <td class="error-cell" title={run.error?.message}>
                      {run.error?.message ?? run.refusal ?? ''}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager
            what="runs"
            offset={runs.data.offset}
            limit={runs.data.limit}
            shown={runs.data.runs.length}
            hasMore={runs.data.hasMore}
            total={runs.data.total}
            onPage={(next) => update({ offset: next })}
          />
        </>
      )}
    </section>
  );
}
