import { useState } from 'preact/hooks';
import { Link, useLocation } from 'wouter-preact';
import { useConversations } from '../api/queries';
import type { ConversationSummary } from '../api/types';
import { shortName } from '../components/conversation-model';
import { count } from '../components/format';
import { Problem } from '../components/problem';
import { TimeAgo } from '../components/time-text';
import { useNow } from '../components/use-now';
import { useTitle } from '../components/use-title';
import { CursorPager } from '../components/cursor-pager';

/** The href of a conversation's page (its id may hold '/' and '~': encoded as one path segment). */
export function conversationHref(id: string): string {
  return `/conversations/${encodeURIComponent(id)}`;
}

function Spent({ summary }: { summary: ConversationSummary }) {
  const cost = summary.budget?.cost;
  const entries = Object.entries(summary.spent);
  if (entries.length === 0 && !cost) return <span class="muted">—</span>;
  if (cost) return <>{`${count(summary.spent[cost.key] ?? 0)} / ${count(cost.max)} ${cost.key}`}</>;
  return <>{entries.map(([key, amount]) => `${count(amount)} ${key}`).join(', ')}</>;
}

/** The conversations, newest first, a page at a time, and a box to open one by its id. */
export function ConversationsView() {
  useTitle('Conversations');
  const [cursors, setCursors] = useState<string[]>([]);
  const [wanted, setWanted] = useState('');
  const [, navigate] = useLocation();
  const conversations = useConversations(cursors.at(-1));
  const now = useNow();
  return (
    <section aria-labelledby="conversations-title">
      <div class="view-head">
        <h1 id="conversations-title">Conversations</h1>
        <form
          class="search"
          role="search"
          onSubmit={(event) => {
            event.preventDefault();
            if (wanted.trim()) navigate(conversationHref(wanted.trim()));
          }}
        >
          <input
            type="search"
            value={wanted}
            placeholder="conversation id"
            aria-label="Open the conversation with this id"
            onInput={(event) => setWanted(event.currentTarget.value)}
          />{' '}
          <button type="submit">Open</button>
        </form>
      </div>
      {conversations.error ? (
        <Problem error={conversations.error} what="the conversations" />
      ) : !conversations.data ? (
        <p class="muted" role="status">
          Loading the conversations…
        </p>
      ) : conversations.data.conversations.length === 0 ? (
        <p>
          No conversation yet. A message sent with <code>{'{ conversation: { budget } }'}</code> starts one (
          <code>engine.send(agent.ref(key), body, options)</code>).
        </p>
      ) : (
        <>
          <div class="table-wrap">
            <table aria-label="Conversations" data-testid="conversations-table">
              <thead>
                <tr>
                  <th scope="col">Conversation</th>
                  <th scope="col">Status</th>
                  <th scope="col">Participants</th>
                  <th scope="col" class="num">
                    Turns
                  </th>
                  <th scope="col" class="num">
                    Messages
                  </th>
                  <th scope="col" class="num">
                    Waiting
                  </th>
                  <th scope="col">Spent</th>
                  <th scope="col">Started</th>
                  <th scope="col">Last change</th>
                </tr>
              </thead>
              <tbody>
                {conversations.data.conversations.map((summary) => (
                  <tr key={summary.id} data-conversation={summary.id}>
                    <td>
                      <Link href={conversationHref(summary.id)}>
                        <code>{summary.id}</code>
                      </Link>
                    </td>
                    <td>
                      <span class={`badge conversation-${summary.status}`}>{summary.status}</span>
                      {summary.error ? <span class="small muted"> {summary.error.code}</span> : null}
                    </td>
                    <td>{summary.participants.map(shortName).join(', ') || '—'}</td>
                    <td class="num">
                      {count(summary.turns)}
                      {summary.budget?.turns !== undefined ? ` / ${count(summary.budget.turns)}` : ''}
                    </td>
                    <td class="num">{count(summary.messages)}</td>
                    <td class="num">{count(summary.waits)}</td>
                    <td>
                      <Spent summary={summary} />
                    </td>
                    <td>
                      <TimeAgo at={summary.startedAt} now={now} />
                    </td>
                    <td>
                      <TimeAgo at={summary.updatedAt} now={now} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <CursorPager
            cursors={cursors}
            next={conversations.data.cursor}
            onCursors={setCursors}
            labels={['Newer', 'Older']}
          />
        </>
      )}
    </section>
  );
}
