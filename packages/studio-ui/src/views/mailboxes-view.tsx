import { Link } from 'wouter-preact';
import { useMailboxes } from '../api/queries';
import type { MailboxInfo } from '../api/types';
import { Question } from '../components/ask-question';
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
