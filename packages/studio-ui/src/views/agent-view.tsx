import { useMutation, useQueryClient } from '@tanstack/preact-query';
import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { ApiError, api } from '../api/client';
import { useAgent } from '../api/queries';
import { keys } from '../api/query-keys';
import type { AgentBody, AgentTurnInfo, Json } from '../api/types';
import { config } from '../config';
import { ConfirmDialog } from '../components/confirm-dialog';
import { dateTime, plural } from '../components/format';
import { JsonBox } from '../components/json-box';
import { Problem } from '../components/problem';
import { StatusBadge } from '../components/status-badge';
import { useTitle } from '../components/use-title';
import { conversationHref } from './conversations-view';

/** One agent, live: its facts, its state as a tree, its dead letters (redeliver) and its turns with their diffs. */
export function AgentView({ address }: { address: string }) {
  const agent = useAgent(address);
  useTitle(`Agent ${address}`);
  if (agent.error) {
    const gone = agent.error instanceof ApiError && agent.error.status === 404;
    return (
      <section>
        <h1>Agent {address}</h1>
        {gone ? (
          <p>No such agent: it never got a message, or it was deleted (or idle past its idleTtlMs).</p>
        ) : (
          <Problem error={agent.error} what="the agent" />
        )}
        <p>
          <Link href="/agents">See the agents</Link>
        </p>
      </section>
    );
  }
  if (!agent.data)
    return (
      <p class="muted" role="status">
        Loading the agent…
      </p>
    );
  const info = agent.data;
  return (
    <section aria-labelledby="agent-title">
      <div class="view-head">
        <h1 id="agent-title">
          <code>{info.ref}</code>
        </h1>
      </div>
      <dl class="facts" data-testid="agent-facts">
        <dt>Type</dt>
        <dd>{info.type}</dd>
        <dt>Turns</dt>
        <dd data-testid="agent-turns">{info.turns}</dd>
        <dt>Inbox</dt>
        <dd data-testid="agent-inbox">
          {plural(info.inbox, 'message')}
          {info.capacity !== undefined && (
            <>
              {' '}
              of {info.capacity}
              {info.inbox >= info.capacity && (
                <>
                  {' '}
                  <span class="badge mailbox-full" title="sends to it are refused (MAILBOX_FULL) or parked">
                    full
                  </span>
                </>
              )}
            </>
          )}
        </dd>
        <dt>Running</dt>
        <dd>
          {info.running ? (
            <Link href={`/runs/${encodeURIComponent(info.running)}`}>
              <code>{info.running}</code>
            </Link>
          ) : (
            'no turn'
          )}
        </dd>
        <dt>Last turn</dt>
        <dd>{info.lastTurnAt === undefined ? 'none yet' : dateTime(info.lastTurnAt)}</dd>
        <dt>Reminders</dt>
        <dd data-testid="agent-reminders">
          {info.reminders.length === 0 ? (
            'none'
          ) : (
            <ul class="plain">
              {info.reminders.map((reminder) => (
                <li key={reminder.name}>
                  <code>{reminder.name}</code> at {dateTime(reminder.due)}
                  {reminder.every === undefined ? '' : `, then every ${reminder.every} ms`}
                </li>
              ))}
            </ul>
          )}
        </dd>
      </dl>
      <h2>State</h2>
      <JsonBox value={info.state as Json} label="The agent's state" />
      <DeadLetters info={info} />
      <Turns turns={info.history} />
    </section>
  );
}

function DeadLetters({ info }: { info: AgentBody }) {
  return (
    <>
      <h2>Dead letters</h2>
      {info.failed.length === 0 ? (
        <p class="muted">None: every message's turn completed.</p>
      ) : (
        <div class="table-wrap">
          <table aria-label="Dead letters" data-testid="dead-letters">
            <thead>
              <tr>
                <th scope="col">Message</th>
                <th scope="col">Body</th>
                <th scope="col">Error</th>
                <th scope="col">Turn</th>
                <th scope="col" />
              </tr>
            </thead>
            <tbody>
              {info.failed.map((letter) => (
                <tr key={letter.message.id}>
                  <td>
                    <code>{letter.message.id}</code>
                  </td>
                  <td>
                    <code>{JSON.stringify(letter.message.body)}</code>
                  </td>
                  <td>
                    {letter.error.code ? <code>{letter.error.code}</code> : null} {letter.error.message}
                  </td>
                  <td>
                    <Link href={`/runs/${encodeURIComponent(letter.runId)}`}>
                      <code>{letter.runId}</code>
                    </Link>
                  </td>
                  <td>
                    <Redeliver address={info.ref} messageId={letter.message.id} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function Redeliver({ address, messageId }: { address: string; messageId: string }) {
  const client = useQueryClient();
  const [open, setOpen] = useState(false);
  const redeliver = useMutation({
    mutationFn: () => api.post('/api/agent/redeliver', { ref: address, messageId }),
    onSuccess: () => {
      setOpen(false);
      void client.invalidateQueries({ queryKey: keys.agent(address) });
    },
  });
  if (config.readOnly) return null;
  return (
    <>
      <button type="button" onClick={() => setOpen(true)} data-testid={`redeliver-${messageId}`}>
        Redeliver
      </button>
      <ConfirmDialog
        title="Redeliver this message?"
        confirm="Redeliver"
        open={open}
        busy={redeliver.isPending}
        onConfirm={() => redeliver.mutate()}
        onClose={() => setOpen(false)}
      >
        <p>
          It goes back to the end of <code>{address}</code>'s inbox, and a turn handles it again.
        </p>
        {redeliver.error && <Problem error={redeliver.error} what="the redelivery" />}
      </ConfirmDialog>
    </>
  );
}

function Turns({ turns }: { turns: AgentTurnInfo[] }) {
  return (
    <>
      <h2>Turns</h2>
      {turns.length === 0 ? (
        <p class="muted">No turn has ended yet (or their runs have expired).</p>
      ) : (
        <ol class="turns" data-testid="agent-turn-list" reversed>
          {[...turns].reverse().map((turn) => (
            <li key={turn.runId} data-testid={`turn-${turn.turn}`}>
              <strong>Turn {turn.turn}</strong> <StatusBadge status={turn.status} />{' '}
              <Link href={`/runs/${encodeURIComponent(turn.runId)}`}>
                <code>{turn.runId}</code>
              </Link>{' '}
              <span class="muted">{dateTime(turn.at)}</span>
              {turn.message && (
                <div>
                  message <code>{JSON.stringify(turn.message.body)}</code>
                  {turn.message.from ? (
                    <>
                      {' '}
                      from <code>{turn.message.from}</code>
                    </>
                  ) : null}
                  {turn.message.reminder ? (
                    <>
                      {' '}
                      (reminder <code>{turn.message.reminder}</code>)
                    </>
                  ) : null}
                  {turn.message.conversation ? (
                    <>
                      {' '}
                      in conversation{' '}
                      <Link href={conversationHref(turn.message.conversation)}>
                        <code data-testid="turn-conversation">{turn.message.conversation}</code>
                      </Link>
                    </>
                  ) : null}
                </div>
              )}
              {turn.patch && (
                <div>
                  changed <code>{turn.patch.length === 0 ? 'nothing' : JSON.stringify(turn.patch)}</code>
                </div>
              )}
            </li>
          ))}
        </ol>
      )}
    </>
  );
}
