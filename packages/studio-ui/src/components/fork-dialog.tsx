import { useMutation } from '@tanstack/preact-query';
import { create } from 'jsondiffpatch';
import { format as asJsonPatch } from 'jsondiffpatch/formatters/jsonpatch';
import { useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api/client';
import { useSharedAt } from '../api/queries';
import type { Json, RunInfo } from '../api/types';
import { ConfirmDialog } from './confirm-dialog';
import { JsonBox, type JsonBoxContent } from './json-box';
import { Problem } from './problem';

const differ = create();

/** Why `content` cannot be a fork's `shared`, if it cannot. */
function problemOf(content: JsonBoxContent | undefined): string | undefined {
  if (!content) return undefined;
  if (content.problem) return `Not JSON yet: ${content.problem}`;
  const value = content.value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return '`shared` must be a JSON object.';
  return undefined;
}

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
  const [step, setStep] = useState(run.status === 'completed' ? Math.max(0, run.steps - 1) : run.steps);
  const [edited, setEdited] = useState<JsonBoxContent>();
  const readEditor = useRef<(() => JsonBoxContent) | undefined>();
  const base = useSharedAt(run.id, step, true);
  const fork = useMutation({
    mutationFn: (shared: Json) =>
      api.post<{ id: string }>(`/api/runs/${encodeURIComponent(run.id)}/fork`, { step, shared }),
    onSuccess: ({ id }) => onForked(id),
  });
  const problem = problemOf(edited);
  // What the edit changes, as the JSON Patch the fork will carry (the server makes the real one).
  const changes = useMemo(() => {
    if (!base.data || !edited || problemOf(edited) || edited.value === undefined) return [];
    const delta = differ.diff(base.data.shared, edited.value);
    return delta === undefined ? [] : asJsonPatch(delta);
  }, [base.data, edited]);
  const submit = () => {
    const now = readEditor.current?.();
    setEdited(now);
    if (!now || problemOf(now) || now.value === undefined) return;
    fork.mutate(now.value);
  };
  return (
    <ConfirmDialog
      title="Fork this run"
      confirm="Start the fork"
      open
      busy={fork.isPending}
      disabled={problem !== undefined || !base.data}
      onConfirm={submit}
      onClose={onClose}
    >
      <p>
        A new run of <code>{run.flow}</code> starts from the checkpoint just before the chosen step (numbered as in the
        steps table), which it runs again, with <code>shared</code> as you leave it below.
      </p>
      <label class="field">
        From step
        <select
          value={step}
          onChange={(event) => {
            setStep(Number(event.currentTarget.value));
            setEdited(undefined);
          }}
        >
          {Array.from({ length: run.status === 'completed' ? run.steps : run.steps + 1 }, (_, n) => (
            <option key={n} value={n}>
              {n === 0 ? '#0 (the start)' : n === run.steps ? `#${n} (the step that did not commit)` : `#${n}`}
            </option>
          ))}
        </select>
      </label>
      {base.error ? (
        <Problem error={base.error} what={`shared at step ${step}`} />
      ) : base.data ? (
        <div class="field">
          <span>shared (edit as JSON)</span>
          <JsonBox
            key={step}
            value={base.data.shared}
            label="shared for the fork"
            mode="text"
            height="18rem"
            onChange={setEdited}
            contentRef={readEditor}
          />
          {problem && (
            <p class="problem" role="alert">
              {problem}
            </p>
          )}
          <div class="small" aria-live="polite" data-testid="fork-changes">
            {changes.length === 0 ? (
              <span class="muted">No change yet: the fork starts with shared as it was just before step #{step}.</span>
            ) : (
              <>
                Changes to shared:
                <ul class="fork-changes">
                  {changes.map((change, index) => (
                    <li key={index}>
                      <code>
                        {change.op} {change.path}
                        {'value' in change ? ` = ${JSON.stringify(change.value)}` : ''}
                      </code>
                    </li>
                  ))}
                </ul>
              </>
            )}
          </div>
        </div>
      ) : (
        <p class="muted">Loading shared at step {step}…</p>
      )}
      {fork.error && <Problem error={fork.error} what="the fork" />}
    </ConfirmDialog>
  );
}
