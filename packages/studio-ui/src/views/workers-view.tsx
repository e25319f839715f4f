import { plural } from '../components/format';
import { useWorkers } from '../api/queries';
import { TimeAgo } from '../components/time-text';
import { useNow } from '../components/use-now';
import { Problem } from '../components/problem';
import { useTitle } from '../components/use-title';

/** The live workers (from their heartbeats): what each runs now and its concurrency. */
export function WorkersView() {
  const workers = useWorkers();
  useTitle('Workers');
  const now = useNow(5000);
  return (
    <section aria-labelledby="workers-title">
      <div class="view-head">
        <h1 id="workers-title">Workers</h1>
        {workers.data && <span class="muted">{plural(workers.data.length, 'worker')} live</span>}
      </div>
      {workers.error ? (
        <Problem error={workers.error} what="the workers" />
      ) : !workers.data ? (
        <p class="muted" role="status">
          Loading the workers…
        </p>
      ) : workers.data.length === 0 ? (
        <p>
          No live worker. Start one with <code>npx queueflow worker --flows &lt;module&gt;</code>.
        </p>
      ) : (
        <div class="table-wrap">
          <table aria-label="Workers" data-testid="workers-table">
            <thead>
              <tr>
                <th scope="col">Worker</th>
                <th scope="col">Host</th>
                <th scope="col" class="num">
                  PID
                </th>
                <th scope="col">Running now</th>
                <th scope="col">Flows</th>
                <th scope="col">Started</th>
                <th scope="col">Last heartbeat</th>
              </tr>
            </thead>
            <tbody>
              {workers.data.map((worker) => (
                <tr key={worker.id}>
                  <td>
                    <code>{worker.id}</code>
                  </td>
                  <td>{worker.host}</td>
                  <td class="num">{worker.pid}</td>
                  <td>
                    <meter
                      min={0}
                      max={worker.concurrency}
                      value={worker.active}
                      aria-label={`${worker.active} of ${worker.concurrency} slots busy`}
                    />{' '}
                    {worker.active} / {worker.concurrency}
                  </td>
                  <td>{worker.flows.join(', ')}</td>
                  <td>
                    <TimeAgo at={worker.startedAt} now={now} />
                  </td>
                  <td>
                    <TimeAgo at={worker.lastSeenAt} now={now} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
