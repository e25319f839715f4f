import { useMutation, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api } from '../api/client';
import { keys } from '../api/query-keys';
import { refreshQueries } from '../api/refresh-queries';
import type { Json, Message, ParkedRun } from '../api/types';
import { config } from '../config';
import { Problem } from './problem';
import { TimeAgo } from './time-text';

/**
 * A question an `ask` left at `address` (a message with a reply address), who asked it, and a
 * form that answers it (`POST /api/answers`): the human-in-the-loop inbox of the Mailboxes and
 * Conversations pages.
 */
export function Question({
  address,
  message,
  askers,
  now,
}: {
  address: string;
  message: Message;
  askers: ParkedRun[];
  now: number;
}) {
  const [text, setText] = useState('');
  const [problem, setProblem] = useState<string>();
  const client = useQueryClient();
  const answer = useMutation({
    mutationFn: (body: Json) => api.post('/api/answers', { address, messageId: message.id, body }),
    onSuccess: () => {
      setText('');
      void refreshQueries(client, { queryKey: keys.mailboxes });
    },
  });
  const id = `answer-${message.id.replace(/\W/g, '_')}`;
  return (
    <li class="question" data-message-id={message.id}>
      <div class="question-head">
        <span>
          at <code>{address}</code> · asked <TimeAgo at={message.sentAt} now={now} />
        </span>
        {askers.map((asker) => (
          <span key={asker.runId}>
            {' '}
            by run{' '}
            <Link href={`/runs/${asker.runId}`}>
              <code>{asker.runId}</code>
            </Link>{' '}
            ({asker.flow}
            {asker.node ? `, node ${asker.node}` : ''}, waiting since <TimeAgo at={asker.since} now={now} />)
          </span>
        ))}
      </div>
      <pre class="json" aria-label="The question">
        {JSON.stringify(message.body, null, 2)}
      </pre>
      {config.readOnly ? (
        <p class="muted small">Read-only studio: answer with `npx queueflow send {message.replyTo} '&lt;json&gt;'`.</p>
      ) : answer.isSuccess ? (
        <p role="status" class="ok">
          Answer sent to <code>{message.replyTo}</code>.
        </p>
      ) : (
        <form
          class="answer-form"
          onSubmit={(event) => {
            event.preventDefault();
            let body: Json;
            try {
              body = JSON.parse(text) as Json;
            } catch (error) {
              setProblem(`not JSON: ${(error as Error).message}. A plain text answer needs quotes: "yes".`);
              return;
            }
            setProblem(undefined);
            answer.mutate(body);
          }}
        >
          <label for={id}>Answer (JSON, sent to {message.replyTo})</label>
          <textarea
            id={id}
            rows={3}
            value={text}
            onInput={(event) => setText(event.currentTarget.value)}
            aria-invalid={problem !== undefined}
            aria-describedby={problem ? `${id}-problem` : undefined}
            required
            spellcheck={false}
            placeholder={'"yes" or {"approved": true}'}
          />
          {problem && (
            <p id={`${id}-problem`} class="problem" role="alert">
              {problem}
            </p>
          )}
          {answer.error && <Problem error={answer.error} what="the answer" />}
          <button type="submit" class="primary" disabled={answer.isPending}>
            {answer.isPending ? 'Sending…' : 'Send answer'}
          </button>
        </form>
      )}
    </li>
  );
}
