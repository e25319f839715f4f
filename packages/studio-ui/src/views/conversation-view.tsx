import { useQueryClient } from '@tanstack/preact-query';
import { useMemo, useState } from 'preact/hooks';
import { Link, useLocation, useSearchParams } from 'wouter-preact';
import { ApiError } from '../api/client';
import { useConversation, useConversationTurn, useMailboxes } from '../api/queries';
import { keys } from '../api/query-keys';
import { FINAL_STATUSES, type ConversationInfo, type Json, type MailboxInfo } from '../api/types';
import { config } from '../config';
import { Question } from '../components/ask-question';
import { ConversationForkDialog } from '../components/conversation-fork-dialog';
import {
  arrowsOf,
  isAgentRef,
  lanesOf,
  OUTSIDE,
  pendingAsks,
  shortName,
  waitEdges,
  type Arrow,
} from '../components/conversation-model';
import { ConversationSpend } from '../components/conversation-spend';
import { count, dateTime, plural } from '../components/format';
import { Problem } from '../components/problem';
import { SequenceDiagram } from '../components/sequence-diagram';
import { StatusBadge } from '../components/status-badge';
import { StepDiff } from '../components/step-diff';
import { TimeAgo } from '../components/time-text';
import { useNow } from '../components/use-now';
import { useTitle } from '../components/use-title';
import { WaitGraph } from '../components/wait-graph';
import { agentHref } from './agents-view';
import { conversationHref } from './conversations-view';

/**
 * One conversation, live: its messages as a sequence diagram (a click shows the turn that
 * handled one, with what it changed), what its parked turns wait for, its spend against its
 * budget, the questions it left for people, and a fork at any message its agents handled.
 */
export function ConversationView({ id }: { id: string }) {
  const conversation = useConversation(id);
  useTitle(conversation.data ? `Conversation ${id} (${conversation.data.status})` : `Conversation ${id}`);
  if (conversation.error) {
    const gone = conversation.error instanceof ApiError && conversation.error.status === 404;
    return (
      <section>
        <h1>Conversation {id}</h1>
        {gone ? (
          <p role="alert">
            No conversation <code>{id}</code>: it never started, or it has expired.
          </p>
        ) : (
          <Problem error={conversation.error} what="the conversation" />
        )}
        <Link href="/conversations">See the conversations</Link>
      </section>
    );
  }
  if (!conversation.data)
    return (
      <p class="muted" role="status">
        Loading conversation {id}…
      </p>
    );
  return <ConversationDetail info={conversation.data} />;
}

function ConversationDetail({ info }: { info: ConversationInfo }) {
  const mailboxes = useMailboxes();
  const now = useNow();
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const [params, setParams] = useSearchParams();
  const [forking, setForking] = useState<Arrow>();
  const arrows = useMemo(() => arrowsOf(info), [info]);
  const asks = pendingAsks(info.id, info, mailboxes.data);
  const lanes = lanesOf(info, arrows, asks);
  const waits = waitEdges(info, arrows, mailboxes.data);
  const chosen = Number(params.get('message'));
  const selected = Number.isInteger(chosen) && chosen >= 1 && chosen <= arrows.length ? arrows[chosen - 1] : undefined;
  const select = (index: number) => setParams((p) => (p.set('message', String(index + 1)), p), { replace: true });
  const fork = (arrow: Arrow) => (config.readOnly || !canFork(arrow) ? undefined : () => setForking(arrow));

  return (
    <article aria-labelledby="conversation-title" class="conversation">
      <header class="run-head">
        <div>
          <h1 id="conversation-title">
            Conversation <code data-testid="conversation-id">{info.id}</code>{' '}
            <span class={`badge conversation-${info.status}`} data-testid="conversation-status">
              {info.status}
            </span>
          </h1>
          <p class="muted">
            {plural(info.participants.length, 'participant')} · {plural(info.turns, 'turn')} ·{' '}
            {plural(info.messages.length, 'message')} in its record · started {dateTime(info.startedAt)} · last change{' '}
            <TimeAgo at={info.updatedAt} now={now} />
          </p>
        </div>
      </header>
      {info.error && (
        <p class="problem" role="alert" data-testid="conversation-error">
          <strong>{info.error.code ?? 'Ended'}:</strong> {info.error.message}
        </p>
      )}

      <div class="conversation-grid">
        <section class="panel" aria-labelledby="sequence-title">
          <h2 id="sequence-title">Messages</h2>
          {arrows.length === 0 && asks.length === 0 ? (
            <p class="muted">No turn has taken a message yet.</p>
          ) : (
            <>
              <SequenceDiagram
                lanes={lanes}
                arrows={arrows}
                asks={asks}
                startedAt={info.startedAt}
                selected={selected?.index}
                onSelect={select}
              />
              <p class="small muted">
                Arrows in the order their turns started; dashed: an answer a turn received. Choose one to see its turn.
              </p>
            </>
          )}
        </section>
        <section class="panel message-panel" aria-labelledby="message-title" aria-live="polite">
          {selected ? (
            <MessageDetail arrow={selected} arrows={arrows} onSelect={select} onFork={fork(selected)} />
          ) : (
            <>
              <h2 id="message-title">The turn of a message</h2>
              <p class="muted">Choose a message in the diagram: its turn shows here, with what it changed.</p>
            </>
          )}
        </section>
      </div>

      <section class="panel" aria-labelledby="waits-title">
        <h2 id="waits-title">Waiting now</h2>
        <WaitGraph edges={waits} lanes={lanes} now={now} />
      </section>

      <section class="panel" aria-labelledby="spend-title">
        <h2 id="spend-title">Budget and spend</h2>
        <ConversationSpend info={info} now={now} />
      </section>

      <Inbox id={info.id} info={info} mailboxes={mailboxes.data} now={now} />

      <section class="panel" aria-labelledby="record-title">
        <h2 id="record-title">Record</h2>
        <MessageTable arrows={arrows} selected={selected?.index} onSelect={select} onFork={fork} />
      </section>

      {forking && (
        <ConversationForkDialog
          id={info.id}
          arrow={forking}
          onClose={() => setForking(undefined)}
          onForked={(created) => {
            setForking(undefined);
            void client.invalidateQueries({ queryKey: keys.conversations });
            navigate(conversationHref(created.id));
          }}
        />
      )}
    </article>
  );
}

/** A message its agent's turn handled (not an answer a turn received) can be forked at. */
function canFork(arrow: Arrow): boolean {
  return arrow.handled && isAgentRef(arrow.to);
}

function Who({ address }: { address: string }) {
  if (address === OUTSIDE) return <span class="muted">outside (a client or a person)</span>;
  if (isAgentRef(address))
    return (
      <Link href={agentHref(address)}>
        <code>{shortName(address)}</code>
      </Link>
    );
  return (
    <Link href={`/runs/${encodeURIComponent(address)}`} title="A plain run that took part">
      <code>{address}</code>
    </Link>
  );
}

function PairNote({ arrow, onSelect }: { arrow: Arrow; onSelect: (index: number) => void }) {
  if (arrow.pair === undefined) return null;
  return (
    <>
      {' '}
      ({arrow.kind === 'ask' ? 'answered by' : 'answers'}{' '}
      <button type="button" class="link-button" onClick={() => onSelect(arrow.pair!)}>
        #{arrow.pair + 1}
      </button>
      )
    </>
  );
}

/** The chosen message and the turn that handled (or received) it, with what that turn changed. */
function MessageDetail({
  arrow,
  arrows,
  onSelect,
  onFork,
}: {
  arrow: Arrow;
  arrows: Arrow[];
  onSelect: (index: number) => void;
  onFork: (() => void) | undefined;
}) {
  const turn = useConversationTurn(arrow.message.runId);
  const message = arrow.message;
  const agent = isAgentRef(message.to);
  const handledBody = arrow.handled && turn.data?.message?.id === message.id ? turn.data.message.body : undefined;
  const handledHere = arrows.find((other) => other.handled && other.message.runId === message.runId);
  return (
    <div data-testid="message-detail">
      <div class="toolbar">
        <h2 id="message-title">
          Message #{arrow.index + 1} <span class="muted small">{arrow.kind === 'send' ? '' : arrow.kind}</span>
        </h2>
        {onFork && (
          <button type="button" onClick={onFork} data-testid="fork-selected">
            Fork here…
          </button>
        )}
      </div>
      <dl class="pairs">
        <dt>From</dt>
        <dd>
          <Who address={arrow.from} />
        </dd>
        <dt>To</dt>
        <dd>
          <Who address={arrow.to} />
        </dd>
        <dt>Id</dt>
        <dd>
          <code>{message.id}</code>
          <PairNote arrow={arrow} onSelect={onSelect} />
        </dd>
        <dt>Sent</dt>
        <dd>{dateTime(message.at)}</dd>
        <dt>{arrow.handled ? 'Handled by' : 'Received by'}</dt>
        <dd>
          {message.turn > 0 ? `turn ${message.turn} of ` : 'the plain run '}
          <Who address={message.to} />, run{' '}
          <Link href={`/runs/${encodeURIComponent(message.runId)}`} data-testid="message-run">
            <code>{message.runId}</code>
          </Link>
          {!arrow.handled && handledHere ? (
            <>
              {' '}
              (the turn of{' '}
              <button type="button" class="link-button" onClick={() => onSelect(handledHere.index)}>
                #{handledHere.index + 1}
              </button>
              )
            </>
          ) : null}
        </dd>
        {handledBody !== undefined && (
          <>
            <dt>Body</dt>
            <dd>
              <code data-testid="message-body">{JSON.stringify(handledBody)}</code>
            </dd>
          </>
        )}
      </dl>
      {turn.error ? (
        <Problem error={turn.error} what="the turn" />
      ) : !turn.data ? (
        <p class="muted">Loading the turn…</p>
      ) : (
        <div class="diff-panel">
          <h3>
            What {agent ? `turn ${message.turn} changed in the state of ` : 'the run changed in shared, '}
            <code>{shortName(message.to)}</code> <StatusBadge status={turn.data.status} />
          </h3>
          {!FINAL_STATUSES.includes(turn.data.status) && (
            <p class="muted small">The turn has not ended: its {plural(turn.data.steps, 'committed step')} so far.</p>
          )}
          <StepDiff
            before={turn.data.before as Json}
            after={turn.data.after as Json}
            patch={turn.data.patch}
            unchanged={
              <>This turn left the state as it was{FINAL_STATUSES.includes(turn.data.status) ? '' : ' so far'}.</>
            }
          />
        </div>
      )}
    </div>
  );
}

function MessageTable({
  arrows,
  selected,
  onSelect,
  onFork,
}: {
  arrows: Arrow[];
  selected: number | undefined;
  onSelect: (index: number) => void;
  onFork: (arrow: Arrow) => (() => void) | undefined;
}) {
  if (arrows.length === 0) return <p class="muted">No message yet.</p>;
  return (
    <div class="table-wrap">
      <table class="compact" aria-label="The messages of the conversation" data-testid="conversation-messages">
        <thead>
          <tr>
            <th scope="col" class="num">
              #
            </th>
            <th scope="col">From</th>
            <th scope="col">To</th>
            <th scope="col">Kind</th>
            <th scope="col">Message</th>
            <th scope="col">Sent</th>
            <th scope="col">Turn</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {arrows.map((arrow) => {
            const fork = onFork(arrow);
            return (
              <tr key={arrow.index} class={selected === arrow.index ? 'selected' : undefined}>
                <td class="num">{count(arrow.index + 1)}</td>
                <td>
                  <Who address={arrow.from} />
                </td>
                <td>
                  <Who address={arrow.to} />
                </td>
                <td>
                  {arrow.kind}
                  {arrow.pair !== undefined ? ` (#${arrow.pair + 1})` : ''}
                </td>
                <td>
                  <code>{arrow.message.id}</code>
                </td>
                <td>{dateTime(arrow.message.at)}</td>
                <td>
                  <Link href={`/runs/${encodeURIComponent(arrow.message.runId)}`}>
                    {arrow.message.turn > 0 ? `turn ${arrow.message.turn}` : 'run'}
                  </Link>
                </td>
                <td class="row-actions">
                  <button
                    type="button"
                    onClick={() => onSelect(arrow.index)}
                    aria-label={`Show message #${arrow.index + 1}`}
                  >
                    Show
                  </button>{' '}
                  {fork && (
                    <button
                      type="button"
                      onClick={fork}
                      data-testid={`fork-message-${arrow.index + 1}`}
                      aria-label={`Fork at message #${arrow.index + 1}`}
                    >
                      Fork…
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** The questions turns of this conversation asked people, to answer here (as on the Mailboxes page). */
function Inbox({
  id,
  info,
  mailboxes,
  now,
}: {
  id: string;
  info: ConversationInfo;
  mailboxes: MailboxInfo[] | undefined;
  now: number;
}) {
  const asks = pendingAsks(id, info, mailboxes);
  const parkedOn = new Map((mailboxes ?? []).map((box) => [box.address, box.parked] as const));
  return (
    <section class="panel" aria-labelledby="inbox-title">
      <h2 id="inbox-title">Questions for people</h2>
      {asks.length === 0 ? (
        <p class="muted" data-testid="conversation-inbox-empty">
          No question of this conversation waits for a person (an <code>ask</code> to a mailbox no agent reads).
        </p>
      ) : (
        <ul class="questions" data-testid="conversation-inbox">
          {asks.map((ask) => (
            <Question
              key={`${ask.address}/${ask.message.id}`}
              address={ask.address}
              message={ask.message}
              askers={parkedOn.get(ask.message.replyTo!) ?? []}
              now={now}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
