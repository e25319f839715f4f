import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { useAgents } from '../api/queries';
import { Problem } from '../components/problem';
import { useTitle } from '../components/use-title';
import { CursorPager } from '../components/cursor-pager';

/** The href of an agent's page (its address holds ':' and '/': encoded as one path segment). */
export function agentHref(ref: string): string {
  return `/agents/${encodeURIComponent(ref)}`;
}

/** The agent keys, in address order, a page at a time, of one type when one is typed in. */
export function AgentsView() {
  useTitle('Agents');
  const [type, setType] = useState('');
  const [cursors, setCursors] = useState<string[]>([]);
  const agents = useAgents(type.trim() || undefined, cursors.at(-1));
  return (
    <section aria-labelledby="agents-title">
      <div class="view-head">
        <h1 id="agents-title">Agents</h1>
        <label>
          Type{' '}
          <input
            type="search"
            value={type}
            placeholder="all types"
            aria-label="Agent type"
            data-testid="agent-type"
            onInput={(event) => {
              setType((event.target as HTMLInputElement).value);
              setCursors([]);
            }}
          />
        </label>
      </div>
      {agents.error ? (
        <Problem error={agents.error} what="the agents" />
      ) : !agents.data ? (
        <p class="muted" role="status">
          Loading the agents…
        </p>
      ) : agents.data.agents.length === 0 ? (
        <p>
          No agent{type.trim() ? ` of type ${type.trim()}` : ''}. An agent appears with its first message (
          <code>engine.send(agent.ref(key), body)</code>).
        </p>
      ) : (
        <>
          <div class="table-wrap">
            <table aria-label="Agents" data-testid="agents-table">
              <thead>
                <tr>
                  <th scope="col">Agent</th>
                  <th scope="col">Type</th>
                  <th scope="col">Key</th>
                </tr>
              </thead>
              <tbody>
                {agents.data.agents.map((agent) => (
                  <tr key={agent.ref}>
                    <td>
                      <Link href={agentHref(agent.ref)}>
                        <code>{agent.ref}</code>
                      </Link>
                    </td>
                    <td>{agent.type}</td>
                    <td>{agent.key}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <CursorPager
            cursors={cursors}
            next={agents.data.cursor}
            onCursors={setCursors}
            labels={['Previous', 'Next']}
          />
        </>
      )}
    </section>
  );
}
