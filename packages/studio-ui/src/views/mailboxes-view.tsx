import { useMutation, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { api } from '../api/client';
import { keys } from '../api/query-keys';
import { refreshQueries } from '../api/refresh-queries';
import { useMailboxes } from '../api/queries';
import type { Json, MailboxInfo, Message, ParkedRun } from '../api/types';
import { config } from '../config';
import { count, dateTime, plural } from '../components/format';
import { Problem } from '../components/problem';
import { TimeAgo } from '../components/time-text';
import { useNow } from '../components/use-now';
import { useTitle } from '../components/use-title';
import { agentHref } from './agents-view';

/**
 * Mailboxes: the runs parked on each address (what they wait for, since when, until when) and the
 * messages waiting; a question from an `ask` (a message with a reply address) can be answered
 * here: the human-in-the-loop inbox.
 */
export function MailboxesView() {
  const mailboxes = useMailboxes();
  const now = useNow();
  useTitle('Mailboxes');
  if (mailboxes.error) return <Problem error={mailboxes.error} what="the mailboxes" />;
  if (!mailboxes.data)
    return (
      <p class="muted" role="status">
        Loading the mailboxes…
      </p>
    );
  const parkedOn = new Map(mailboxes.data.map((box) => [box.address, box.parked] as const));
  const questions = mailboxes.data.flatMap((box) =>
    box.messages.filter((m) => m.replyTo).map((message) => ({ box, message })),
  );
  return (
    <section aria-labelledby="mailboxes-title">
      <div class="view-head">
        <h1 id="mailboxes-title">Mailboxes</h1>
        <span class="muted">
          {plural(mailboxes.data.length, 'mailbox', 'mailboxes')} with messages or waiting runs ·{' '}
          {plural(questions.length, 'question')} to answer
        </span>
      </div>
      {mailboxes.data.length === 0 && <p>No message waits and no run is parked on a mailbox.</p>}
      {questions.length > 0 && (
        <section class="panel" aria-labelledby="inbox-title">
          <h2 id="inbox-title">Questions waiting for an answer</h2>
          <ul class="questions">
            {questions.map(({ box, message }) => (
              <Question
                key={`${box.address}/${message.id}`}
                address={box.address}
                message={message}
                askers={parkedOn.get(message.replyTo!) ?? []}
                now={now}
              />
            ))}
          </ul>
        </section>
      )}
      {mailboxes.data.map((box) => (
        <Mailbox key={box.address} box={box} now={now} />
      ))}
    </section>
  );
}

function Mailbox({ box, now }: { box: MailboxInfo; now: number }) {
  return (
    <section class="panel mailbox" aria-label={`Mailbox ${box.address}`} data-address={box.address}>
      <h2>
        {box.address.startsWith('agent:') ? (
          <Link href={agentHref(box.address)} title="This mailbox is an agent's inbox">
            <code>{box.address}</code>
          </Link>
        ) : (
          <code>{box.address}</code>
        )}{' '}
        <span class="muted small">
          {plural(box.size, 'message')} waiting · {plural(box.parked.length, 'run')} parked
        </span>
      </h2>
      {box.parked.length > 0 && (
        <table class="compact" aria-label={`Runs parked on ${box.address}`}>
          <thead>
            <tr>
              <th scope="col">Parked run</th>
              <th scope="col">Flow</th>
              <th scope="col">Node</th>
              <th scope="col">Since</th>
              <th scope="col">Gives up</th>
            </tr>
          </thead>
          <tbody>
            {box.parked.map((parked) => (
              <tr key={parked.runId}>
                <td>
                  <Link href={`/runs/${parked.runId}`}>
                    <code>{parked.runId}</code>
                  </Link>
                </td>
                <td>{parked.flow}</td>
                <td>{parked.node ? <code>{parked.node}</code> : '—'}</td>
                <td>
                  <TimeAgo at={parked.since} now={now} />
                </td>
                <td>{parked.deadline === null ? 'never' : <TimeAgo at={parked.deadline} now={now} future />}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {box.messages.length > 0 && (
        <ol class="messages" aria-label={`Messages waiting at ${box.address}`}>
          {box.messages.map((message) => (
            <li key={message.id}>
              <span class="muted small">
                <code>{message.id}</code> · sent {dateTime(message.sentAt)}
                {message.replyTo && (
                  <>
                    {' '}
                    · answer to <code>{message.replyTo}</code>
                  </>
                )}
              </span>
              <pre class="json">{JSON.stringify(message.body, null, 2)}</pre>
            </li>
          ))}
          {box.size > box.messages.length && <li class="muted">…and {count(box.size - box.messages.length)} more</li>}
        </ol>
      )}
    </section>
  );
}

function Question({
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
