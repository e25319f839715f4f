import { Link } from 'wouter-preact';
import { useQueues } from '../api/queries';
import type { BudgetInfo } from '../api/types';
import { count, duration, plural } from '../components/format';
import { Problem } from '../components/problem';
import { TimeAgo } from '../components/time-text';
import { useNow } from '../components/use-now';
import { useTitle } from '../components/use-title';

/**
 * The queues (bull-board's first view): per queue, its tasks waiting, delayed, throttled and
 * running, and the live workers serving it; per budget key (flow control), its use against its
 * limits and the runs waiting for it. Live: the server sends it again when it changes.
 */
export function QueuesView() {
  const data = useQueues();
  useTitle('Queues');
  const now = useNow(5000);
  return (
    <section aria-labelledby="queues-title">
      <div class="view-head">
        <h1 id="queues-title">Queues</h1>
        {data.data && <span class="muted">{plural(data.data.queues.length, 'queue')}</span>}
      </div>
      {data.error ? (
        <Problem error={data.error} what="the queues" />
      ) : !data.data ? (
        <p class="muted" role="status">
          Loading the queues…
        </p>
      ) : (
        <>
          <div class="table-wrap">
            <table aria-label="Queues" data-testid="queues-table">
              <thead>
                <tr>
                  <th scope="col">Queue</th>
                  <th scope="col" class="num">
                    Waiting
                  </th>
                  <th scope="col" class="num" title="Due later: a retry's backoff, a budget, a receive timeout">
                    Delayed
                  </th>
                  <th scope="col" class="num" title="Runs whose next step waits for a budget">
                    Throttled
                  </th>
                  <th scope="col" class="num">
                    Running
                  </th>
                  <th scope="col">Workers serving it</th>
                </tr>
              </thead>
              <tbody>
                {data.data.queues.map((queue) => (
                  <tr key={queue.name} data-queue={queue.name}>
                    <th scope="row">
                      <code>{queue.name}</code>
                    </th>
                    <td class="num" data-testid="waiting">
                      {count(queue.waiting)}
                    </td>
                    <td class="num" data-testid="delayed">
                      {count(queue.delayed)}
                    </td>
                    <td class={queue.throttled > 0 ? 'num warn' : 'num'} data-testid="throttled">
                      {count(queue.throttled)}
                    </td>
                    <td class="num" data-testid="running">
                      {count(queue.running)}
                    </td>
                    <td data-testid="workers">
                      {queue.workers.length === 0 ? (
                        <span class="warn-text">
                          none: start one with <code>queueflow worker --queues {queue.name}</code>
                        </span>
                      ) : (
                        <Link href="/workers">{plural(queue.workers.length, 'worker')}</Link>
                      )}
                      {queue.workers.length > 0 && <span class="muted small"> ({queue.workers.join(', ')})</span>}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>

          <h2 id="budgets-title">Budgets</h2>
          {data.data.budgets.length === 0 ? (
            <p class="muted">No budget key used in the last day (a node's limits).</p>
          ) : (
            <div class="table-wrap">
              <table aria-labelledby="budgets-title" data-testid="budgets-table">
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">In use / concurrency</th>
                    <th scope="col">Window / rate</th>
                    <th scope="col" class="num">
                      Waiting
                    </th>
                    <th scope="col">Last used</th>
                  </tr>
                </thead>
                <tbody>
                  {data.data.budgets.map((budget) => (
                    <BudgetRow key={budget.key} budget={budget} now={now} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

function BudgetRow({ budget, now }: { budget: BudgetInfo; now: number }) {
  const held = budget.heldUntil !== undefined && budget.heldUntil > now;
  return (
    <tr data-budget={budget.key}>
      <th scope="row">
        <code>{budget.key}</code>
        {held && <span class="tag warn-text"> held back (429) for {duration(budget.heldUntil! - now)}</span>}
      </th>
      <td data-testid="concurrency">
        {budget.concurrency === undefined ? (
          <span class="muted">{count(budget.inUse)} (no limit)</span>
        ) : (
          <>
            <meter
              min={0}
              max={budget.concurrency}
              value={budget.inUse}
              aria-label={`${budget.inUse} of ${budget.concurrency} at once`}
            />{' '}
            {count(budget.inUse)} / {count(budget.concurrency)}
          </>
        )}
      </td>
      <td data-testid="rate">
        {budget.rate === undefined ? (
          <span class="muted">no rate</span>
        ) : (
          <>
            <meter
              min={0}
              max={budget.rate.max}
              value={budget.unitsInWindow}
              aria-label={`${budget.unitsInWindow} of ${budget.rate.max} per window`}
            />{' '}
            {count(budget.unitsInWindow)} / {count(budget.rate.max)} per {duration(budget.rate.perMs)}
          </>
        )}
      </td>
      <td class={budget.waiting.length > 0 ? 'num warn' : 'num'} data-testid="budget-waiting">
        {count(budget.waiting.length)}
      </td>
      <td>
        <TimeAgo at={budget.usedAt} now={now} />
      </td>
    </tr>
  );
}
