import { useMutation } from '@tanstack/preact-query';
import { useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api/client';
import { useConversationTurn } from '../api/queries';
import type { ConversationFork, Json, PatchOperation } from '../api/types';
import { ConfirmDialog } from './confirm-dialog';
import type { Arrow } from './conversation-model';
import { shortName } from './conversation-model';
import { JsonBox, type JsonBoxContent } from './json-box';
import { Problem } from './problem';

const OPS = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test']);
/** The patch editor's first value: one array for good (a new value would reset the editor). */
const NO_PATCH: Json = [];

/** The patch in `content`, or why it is none. The server checks it again, and the engine applies it. */
function patchOf(content: JsonBoxContent | undefined): { patch?: PatchOperation[]; problem?: string } {
  if (!content) return { patch: [] };
  if (content.problem) return { problem: `Not JSON yet: ${content.problem}` };
  const value = content.value;
  if (!Array.isArray(value)) return { problem: 'A JSON Patch is an array of operations: [{ "op", "path", … }].' };
  for (const [i, op] of value.entries()) {
    const { op: name, path } = (op ?? {}) as { op?: unknown; path?: unknown };
    if (typeof name !== 'string' || !OPS.has(name) || typeof path !== 'string')
      return { problem: `Operation ${i + 1} needs an "op" (${[...OPS].join(', ')}) and a "path".` };
  }
  return { patch: value as unknown as PatchOperation[] };
}

/**
 * Fork the conversation at a message: its agents are copied with their states at that message,
 * and the message is delivered again to its agent's copy, with the JSON Patch below applied to
 * that copy's state and, when asked, another body (`POST /api/conversation/fork`). The page then
 * opens the new conversation.
 */
export function ConversationForkDialog({
  id,
  arrow,
  onClose,
  onForked,
}: {
  id: string;
  arrow: Arrow;
  onClose: () => void;
  onForked: (fork: ConversationFork) => void;
}) {
  const turn = useConversationTurn(arrow.message.runId);
  const [patchContent, setPatchContent] = useState<JsonBoxContent>();
  const [bodyContent, setBodyContent] = useState<JsonBoxContent>();
  const [newBody, setNewBody] = useState(false);
  const readPatch = useRef<(() => JsonBoxContent) | undefined>();
  const readBody = useRef<(() => JsonBoxContent) | undefined>();
  const fork = useMutation({
    mutationFn: (input: { patch: PatchOperation[]; body?: Json }) =>
      api.post<ConversationFork>('/api/conversation/fork', { id, atMessage: arrow.message.id, ...input }),
    onSuccess: onForked,
  });
  // The body as first read: a later read of the turn (a live refresh) must not reset the editor.
  const knownBody = turn.data?.message?.id === arrow.message.id ? turn.data.message.body : undefined;
  const firstBody = useMemo(() => knownBody ?? null, [knownBody === undefined]);
  const { patch, problem } = patchOf(patchContent);
  const bodyProblem = newBody && bodyContent?.problem ? `The body is not JSON yet: ${bodyContent.problem}` : undefined;
  const agent = shortName(arrow.to);
  const submit = () => {
    const nowPatch = readPatch.current?.();
    setPatchContent(nowPatch);
    const checked = patchOf(nowPatch);
    if (!checked.patch) return;
    let body: Json | undefined;
    if (newBody) {
      const nowBody = readBody.current?.();
      setBodyContent(nowBody);
      if (!nowBody || nowBody.problem || nowBody.value === undefined) return;
      body = nowBody.value;
    }
    fork.mutate({ patch: checked.patch, ...(body === undefined ? {} : { body }) });
  };
  return (
    <ConfirmDialog
      title="Fork this conversation"
      confirm="Start the fork"
      open
      busy={fork.isPending}
      disabled={problem !== undefined || bodyProblem !== undefined}
      onConfirm={submit}
      onClose={onClose}
    >
      <p>
        A new conversation starts at message #{arrow.index + 1} (<code>{arrow.message.id}</code>): each of its agents
        gets a copy with its state at that message, and the copy of <code>{agent}</code> gets the message again. The
        original is left as it is.
      </p>
      {turn.error ? (
        <Problem error={turn.error} what={`the state of ${agent} at this message`} />
      ) : turn.data ? (
        <div class="field" key="state" data-testid="fork-state">
          <span>
            The state of <code>{agent}</code> at this message (the patch applies to it)
          </span>
          <JsonBox value={turn.data.before} label={`The state of ${agent} at this message`} height="10rem" />
        </div>
      ) : (
        <p class="muted" key="loading">
          Loading the state of {agent} at this message…
        </p>
      )}
      <div class="field" key="patch" data-testid="fork-patch">
        <span>JSON Patch of that state (RFC 6902, empty: as it was)</span>
        <JsonBox
          value={NO_PATCH}
          label="JSON Patch for the fork"
          mode="text"
          height="8rem"
          onChange={setPatchContent}
          contentRef={readPatch}
        />
        {problem ? (
          <p class="problem" role="alert">
            {problem}
          </p>
        ) : (
          <div class="small" aria-live="polite" data-testid="fork-patch-ops">
            {patch && patch.length > 0 ? (
              <ul class="fork-changes">
                {patch.map((operation, index) => (
                  <li key={index}>
                    <code>
                      {operation.op} {operation.path}
                      {'value' in operation ? ` = ${JSON.stringify(operation.value)}` : ''}
                    </code>
                  </li>
                ))}
              </ul>
            ) : (
              <span class="muted">No change: the copy starts with the state it had.</span>
            )}
          </div>
        )}
      </div>
      <label class="inline-check">
        <input type="checkbox" checked={newBody} onChange={(event) => setNewBody(event.currentTarget.checked)} />{' '}
        Deliver the message with another body
      </label>
      {newBody && (
        <div class="field" key="body" data-testid="fork-body">
          <span>The body</span>
          {turn.data && knownBody === undefined && (
            <span class="muted small">
              Its body is not known here (its turn has not ended, or its run has expired): write the one to deliver.
            </span>
          )}
          {turn.data || turn.error ? (
            <JsonBox
              value={firstBody}
              label="The body for the fork"
              mode="text"
              height="8rem"
              onChange={setBodyContent}
              contentRef={readBody}
            />
          ) : (
            <p class="muted">Loading the message…</p>
          )}
          {bodyProblem && (
            <p class="problem" role="alert">
              {bodyProblem}
            </p>
          )}
        </div>
      )}
      {fork.error && <Problem error={fork.error} what="the fork" />}
    </ConfirmDialog>
  );
}
