import { Link, useSearchParams } from 'wouter-preact';
import { ApiError } from '../api/client';
import { useGraph, useHistory, useMailboxes, useRun, useRunEvents, useStepDiff } from '../api/queries';
import { FINAL_STATUSES, type RunInfo, type StepRecord } from '../api/types';
import { config } from '../config';
import { FanOutPanel } from '../components/fan-out-panel';
import { FlowGraphView, type NodeMarks } from '../components/flow-graph';
import { count, dateTime, duration } from '../components/format';
import { JsonBox } from '../components/json-box';
import { Problem } from '../components/problem';
import { RunActions } from '../components/run-actions';
import { RunErrors } from '../components/run-errors';
import { RunEvents } from '../components/run-events';
import { StatusBadge } from '../components/status-badge';
import { StepDiff } from '../components/step-diff';
import { StepTimeline } from '../components/step-timeline';
import { TimeAgo } from '../components/time-text';
import { useNow } from '../components/use-now';
import { useTitle } from '../components/use-title';
import { agentHref } from './agents-view';

/** One run, live: facts and actions, its graph, step timeline and diffs, errors, fan-out, `shared`. */
export function RunView({ id }: { id: string }) {
  const run = useRun(id);
  useTitle(run.data ? `Run ${id} (${run.data.status})` : `Run ${id}`);
  const history = useHistory(id);
  if (run.error) {
    const gone = run.error instanceof ApiError && run.error.status === 404;
    return (
      <section>
        <h1>Run {id}</h1>
        {gone ? (
          <p role="alert">
            No run <code>{id}</code>: it never started, or its record has expired.
          </p>
        ) : (
          <Problem error={run.error} what="the run" />
        )}
        <Link href="/">Back to the runs</Link>
      </section>
    );
  }
  if (!run.data)
    return (
      <p class="muted" role="status">
        Loading run {id}…
      </p>
    );
  return <RunDetail run={run.data} steps={history.data} historyError={history.error} />;
}

function marksOf(run: RunInfo, steps: StepRecord[] | undefined): NodeMarks {
  const ended = FINAL_STATUSES.includes(run.status);
  return {
    visited: (steps ?? []).map((step) => step.node),
    current: ended ? undefined : run.currentNode,
    failed: run.status === 'failed' ? (run.error?.node ?? run.currentNode) : undefined,
  };
}

function RunDetail({
  run,
  steps,
  historyError,
}: {
  run: RunInfo;
  steps: StepRecord[] | undefined;
  historyError: unknown;
}) {
  const graph = useGraph(run.flow);
  const now = useNow();
  const [params, setParams] = useSearchParams();
  const chosen = params.get('step');
  const lastStep = steps && steps.length > 0 ? steps[steps.length - 1]!.step : undefined;
  const selected = chosen !== null && steps?.some((s) => String(s.step) === chosen) ? Number(chosen) : lastStep;
  const selectedRecord = steps?.find((s) => s.step === selected);
  const diff = useStepDiff(run.id, selected);
  const mailboxes = useMailboxes();
  const logged = useRunEvents(run.id);

  return (
    <article aria-labelledby="run-title" class="run">
      <header class="run-head">
        <div>
          <h1 id="run-title">
            Run <code data-testid="run-id">{run.id}</code> <StatusBadge status={run.status} />
          </h1>
          <p class="muted">
            flow <strong>{run.flow}</strong>
            {run.currentNode && !FINAL_STATUSES.includes(run.status) && (
              <>
                {' '}
                · at <code>{run.currentNode}</code>
              </>
            )}
            {run.parentId && (
              <>
                {' '}
                · child of <Link href={`/runs/${run.parentId}`}>{run.parentId}</Link>
              </>
            )}
            {run.forkedFrom && (
              <>
                {' '}
                · forked from{' '}
                <Link href={`/runs/${run.forkedFrom.runId}?step=${run.forkedFrom.step}`}>
                  {run.forkedFrom.runId}
                </Link>{' '}
                at step #{run.forkedFrom.step}
              </>
            )}
            {run.agent && (
              <>
                {' '}
                · turn {run.agent.turn} of agent{' '}
                <Link href={agentHref(run.agent.ref)} data-testid="run-agent">
                  {run.agent.ref}
                </Link>
              </>
            )}
          </p>
        </div>
        {!config.readOnly && <RunActions run={run} />}
      </header>

      <dl class="facts">
        <div>
          <dt>Steps</dt>
          <dd data-testid="run-steps">{count(run.steps)}</dd>
        </div>
        <div>
          <dt>Failed tries (this step)</dt>
          <dd>{run.attempts}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <TimeAgo at={run.createdAt} now={now} />
          </dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>
            <TimeAgo at={run.startedAt} now={now} />
          </dd>
        </div>
        <div>
          <dt>{run.finishedAt ? 'Took' : 'Running for'}</dt>
          <dd>{run.startedAt ? duration((run.finishedAt ?? now) - run.startedAt) : '—'}</dd>
        </div>
        <div>
          <dt>Last action</dt>
          <dd>{run.lastAction ?? '—'}</dd>
        </div>
        {run.retries ? (
          <div>
            <dt>Retries</dt>
            <dd>{run.retries}</dd>
          </div>
        ) : null}
      </dl>
      {run.error && (
        <p class="problem" role="alert" data-testid="run-error">
          <strong>{run.error.code ?? run.error.name ?? 'Error'}:</strong> {run.error.message}
          {run.error.node && (
            <>
              {' '}
              (node <code>{run.error.node}</code>
              {run.error.attempts ? `, after ${run.error.attempts} tries` : ''})
            </>
          )}
        </p>
      )}
      {run.refusal && <p class="warn-box">A worker gave this step back: {run.refusal}</p>}
      {run.noWorker && <p class="warn-box">This step waits: {run.noWorker}</p>}

      <section class="panel" aria-labelledby="graph-title">
        <h2 id="graph-title">Graph</h2>
        {graph.data ? (
          <FlowGraphView graph={graph.data} marks={marksOf(run, steps)} />
        ) : graph.error ? (
          <p class="muted">
            No graph: {(graph.error as Error).message}. Start the studio with <code>--flows &lt;module&gt;</code> to
            draw it.
          </p>
        ) : (
          <p class="muted">Loading the graph…</p>
        )}
      </section>

      <section class="panel" aria-labelledby="steps-title">
        <h2 id="steps-title">Steps</h2>
        {historyError ? (
          <Problem error={historyError} what="the steps" />
        ) : !steps ? (
          <p class="muted">Loading the steps…</p>
        ) : (
          <StepTimeline
            steps={steps}
            selected={selected}
            onSelect={(step) => setParams((p) => (p.set('step', String(step)), p), { replace: true })}
          />
        )}
        {selectedRecord && (
          <div class="diff-panel" aria-live="polite">
            <h3>
              What step #{selectedRecord.step} (<code>{selectedRecord.node}</code>) changed in <code>shared</code>
            </h3>
            {diff.error ? (
              <Problem error={diff.error} what="the diff" />
            ) : diff.data ? (
              <StepDiff before={diff.data.before} after={diff.data.after} patch={selectedRecord.patch} />
            ) : (
              <p class="muted">Loading the diff…</p>
            )}
          </div>
        )}
      </section>

      <FanOutPanel run={run} />

      <section class="panel" aria-labelledby="events-title">
        <h2 id="events-title">Events</h2>
        <RunEvents run={run} steps={steps} mailboxes={mailboxes.data} logged={logged.data} />
      </section>

      <section class="panel" aria-labelledby="errors-title">
        <h2 id="errors-title">Errors ({run.errors.length})</h2>
        <RunErrors errors={run.errors} />
      </section>

      <section class="panel" aria-labelledby="shared-title">
        <h2 id="shared-title">
          <code>shared</code> {FINAL_STATUSES.includes(run.status) ? 'at the end' : `before step #${run.steps}`}
        </h2>
        <JsonBox value={run.shared} label="shared" />
      </section>
      <p class="muted small">Updated {dateTime(run.updatedAt)}</p>
    </article>
  );
}
