import type { ComponentChildren } from 'preact';
import { plural } from './format';
import { create } from 'jsondiffpatch/with-text-diffs';
import { format } from 'jsondiffpatch/formatters/html';
import 'jsondiffpatch/formatters/styles/html.css';
import { useMemo, useState } from 'preact/hooks';
import type { Json, PatchOperation } from '../api/types';

const differ = create({
  // Array items that are objects with an id are matched by it, so a changed item reads as one.
  objectHash: (item: object, index?: number) => {
    const id = (item as { id?: unknown }).id ?? (item as { key?: unknown }).key;
    return typeof id === 'string' || typeof id === 'number' ? String(id) : `$$index:${index}`;
  },
  arrays: { detectMove: true },
  textDiff: { minLength: 120 },
});

export interface StepDiffProps {
  before: Json;
  after: Json;
  patch: PatchOperation[];
  /** What to say when nothing changed. @defaultValue that the step left `shared` as it was */
  unchanged?: ComponentChildren;
}

/**
 * What a step changed in `shared`, by jsondiffpatch's HTML formatter (its markup is the
 * library's; it is not diffed here by hand), with unchanged values hidden unless asked for, and
 * the step's JSON Patch as recorded.
 */
export function StepDiff({ before, after, patch, unchanged }: StepDiffProps) {
  const [showUnchanged, setShowUnchanged] = useState(false);
  const html = useMemo(() => {
    const delta = differ.diff(before, after);
    return delta === undefined ? undefined : format(delta, before);
  }, [before, after]);
  return (
    <div class="step-diff">
      {html === undefined ? (
        <p class="muted" data-testid="step-diff-empty">
          {unchanged ?? (
            <>
              This step left <code>shared</code> as it was.
            </>
          )}
        </p>
      ) : (
        <>
          <label class="inline-check">
            <input
              type="checkbox"
              checked={showUnchanged}
              onChange={(event) => setShowUnchanged(event.currentTarget.checked)}
            />{' '}
            Show unchanged values
          </label>
          <div
            class={`diff-html ${showUnchanged ? 'jsondiffpatch-unchanged-visible' : 'jsondiffpatch-unchanged-hidden'}`}
            data-testid="step-diff"
            // jsondiffpatch's formatter escapes the values it writes.
            dangerouslySetInnerHTML={{ __html: html }}
          />
        </>
      )}
      <details class="patch-ops">
        <summary>JSON Patch ({plural(patch.length, 'operation')})</summary>
        <ol>
          {patch.map((operation, index) => (
            <li key={index}>
              <code>
                {operation.op} {operation.path}
                {'from' in operation ? ` from ${operation.from}` : ''}
                {'value' in operation ? ` = ${JSON.stringify(operation.value)}` : ''}
              </code>
            </li>
          ))}
        </ol>
      </details>
    </div>
  );
}
