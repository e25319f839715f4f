import { useMutation } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { api } from '../api/client';
import { useSharedAt } from '../api/queries';
import type { Json, RunInfo } from '../api/types';
import { ConfirmDialog } from './confirm-dialog';
import { JsonBox } from './json-box';
import { Problem } from './problem';

/**
 * Fork: pick a committed step, edit `shared` as it was after it (a JSON editor), confirm. The
 * server turns the edit into a JSON Patch and starts the new run, which the page then opens.
 */
export function ForkDialog({
  run,
  onClose,
  onForked,
}: {
  run: RunInfo;
  onClose: () => void;
  onForked: (id: string) => void;
}) {
  const [step, setStep] = useState(run.steps);
  const [edited, setEdited] = useState<{ value: Json | undefined; problem: string | undefined }>();
  const base = useSharedAt(run.id, step, true);
  const fork = useMutation({
    mutationFn: () =>
      api.post<{ id: string }>(
        `/api/runs/${encodeURIComponent(run.id)}/fork`,
        edited?.value === undefined ? { step } : { step, shared: edited.value },
      ),
    onSuccess: ({ id }) => onForked(id),
  });
  const invalid =
    edited?.problem !== undefined ||
    (edited !== undefined &&
      (edited.value === null || typeof edited.value !== 'object' || Array.isArray(edited.value)));
  return (
    <ConfirmDialog
      title="Fork this run"
      confirm="Start the fork"
      open
      busy={fork.isPending}
      disabled={invalid || !base.data}
      onConfirm={() => fork.mutate()}
      onClose={onClose}
    >
      <p>
        A new run of <code>{run.flow}</code> starts from the checkpoint after the chosen step, with <code>shared</code>{' '}
        as you leave it below.
      </p>
      <label class="field">
        After step{' '}
        <select
          value={step}
          onChange={(event) => {
            setStep(Number(event.currentTarget.value));
            setEdited(undefined);
          }}
        >
          {Array.from({ length: run.steps + 1 }, (_, n) => (
            <option key={n} value={n}>
              {n === 0 ? '0 (the start)' : n}
            </option>
          ))}
        </select>
      </label>
      {base.error ? (
        <Problem error={base.error} what={`shared at step ${step}`} />
      ) : base.data ? (
        <div class="field">
          <span id="fork-shared-label">shared (edit as JSON)</span>
          <JsonBox
            key={step}
            value={base.data.shared}
            label="shared for the fork"
            mode="text"
            height="18rem"
            onChange={(value, problem) => setEdited({ value, problem })}
          />
          {edited?.problem && (
            <p class="problem" role="alert">
              Not JSON yet: {edited.problem}
            </p>
          )}
          {!edited?.problem && invalid && (
            <p class="problem" role="alert">
              <code>shared</code> must be a JSON object.
            </p>
          )}
        </div>
      ) : (
        <p class="muted">Loading shared at step {step}…</p>
      )}
      {fork.error && <Problem error={fork.error} what="the fork" />}
    </ConfirmDialog>
  );
}
