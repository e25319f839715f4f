import { useMutation, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { useLocation } from 'wouter-preact';
import { api } from '../api/client';
import { keys } from '../api/query-keys';
import { refreshQueries } from '../api/refresh-queries';
import { FINAL_STATUSES, type RunInfo } from '../api/types';
import { ConfirmDialog } from './confirm-dialog';
import { ForkDialog } from './fork-dialog';
import { Problem } from './problem';

type Open = 'cancel' | 'retry' | 'fork' | undefined;

/** Cancel, retry and fork, each after a confirmation. Not shown when the studio is read-only. */
export function RunActions({ run }: { run: RunInfo }) {
  const [open, setOpen] = useState<Open>();
  const [, navigate] = useLocation();
  const client = useQueryClient();
  const refresh = () => {
    void refreshQueries(client, { queryKey: keys.run(run.id) });
    void refreshQueries(client, { queryKey: keys.history(run.id) });
    void refreshQueries(client, { queryKey: keys.runs });
  };
  const cancel = useMutation({
    mutationFn: () => api.post(`/api/runs/${encodeURIComponent(run.id)}/cancel`),
    onSuccess: () => (setOpen(undefined), refresh()),
  });
  const retry = useMutation({
    mutationFn: () => api.post(`/api/runs/${encodeURIComponent(run.id)}/retry`),
    onSuccess: () => (setOpen(undefined), refresh()),
  });
  const ended = FINAL_STATUSES.includes(run.status);
  const retryable = run.status === 'failed' || run.status === 'cancelled';
  return (
    <div class="actions" role="group" aria-label="Run actions">
      <button
        type="button"
        class="danger"
        disabled={ended}
        onClick={() => (cancel.reset(), setOpen('cancel'))}
        title={ended ? 'The run has ended' : 'Stop the run at its next step boundary'}
      >
        Cancel run
      </button>
      <button
        type="button"
        disabled={!retryable}
        onClick={() => (retry.reset(), setOpen('retry'))}
        title={retryable ? 'Go on from the last committed step' : 'Only a failed or cancelled run can be retried'}
      >
        Retry
      </button>
      <button type="button" onClick={() => setOpen('fork')} title="Start a new run from a committed step">
        Fork…
      </button>

      <ConfirmDialog
        title="Cancel this run?"
        confirm="Cancel the run"
        danger
        open={open === 'cancel'}
        busy={cancel.isPending}
        onConfirm={() => cancel.mutate()}
        onClose={() => setOpen(undefined)}
      >
        <p>
          Run <code>{run.id}</code> becomes <strong>cancelled</strong> now; a step in flight commits nothing. Retry can
          take it on again later.
        </p>
        {cancel.error && <Problem error={cancel.error} what="the cancel" />}
      </ConfirmDialog>
      <ConfirmDialog
        title="Retry this run?"
        confirm="Retry"
        open={open === 'retry'}
        busy={retry.isPending}
        onConfirm={() => retry.mutate()}
        onClose={() => setOpen(undefined)}
      >
        <p>
          Run <code>{run.id}</code> goes on under the same id from its last committed step ({run.steps}): the step that
          did not commit runs again.
        </p>
        {retry.error && <Problem error={retry.error} what="the retry" />}
      </ConfirmDialog>
      {open === 'fork' && (
        <ForkDialog
          run={run}
          onClose={() => setOpen(undefined)}
          onForked={(id) => {
            setOpen(undefined);
            void refreshQueries(client, { queryKey: keys.runs });
            navigate(`/runs/${id}`);
          }}
        />
      )}
    </div>
  );
}
