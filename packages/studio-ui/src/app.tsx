import { useEffect, useRef } from 'preact/hooks';
import { Link, Route, Router, Switch, useLocation, useRoute } from 'wouter-preact';
import { config } from './config';
import { useLiveState } from './live/live-events';
import { AgentView } from './views/agent-view';
import { AgentsView } from './views/agents-view';
import { ConversationView } from './views/conversation-view';
import { ConversationsView } from './views/conversations-view';
import { MailboxesView } from './views/mailboxes-view';
import { RunView } from './views/run-view';
import { RunsView } from './views/runs-view';
import { QueuesView } from './views/queues-view';
import { WorkersView } from './views/workers-view';

function NavLink({ href, children }: { href: string; children: string }) {
  const [exact] = useRoute(href);
  const [nested] = useRoute(href === '/' ? '/runs/*' : `${href}/*`);
  const current = exact || nested;
  return (
    <Link href={href} class={current ? 'nav-link current' : 'nav-link'} aria-current={current ? 'page' : undefined}>
      {children}
    </Link>
  );
}

function LiveBadge() {
  const { state, problem } = useLiveState();
  const text = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…', off: 'offline' }[state];
  return (
    <span
      class={`live live-${state}`}
      role="status"
      aria-live="polite"
      title={problem ?? 'Updates arrive as runs change'}
      data-testid="live-state"
    >
      <span class="dot" aria-hidden="true" /> {text}
    </span>
  );
}

/** After a move to another view (not the first load), focus goes to the content, for screen readers. */
function FocusOnNavigation() {
  const [location] = useLocation();
  const first = useRef(true);
  useEffect(() => {
    if (first.current) return void (first.current = false);
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [location]);
  return null;
}

/** The studio: a header with the views, and the view the URL names. */
export function App() {
  return (
    <Router base={config.basePath}>
      <FocusOnNavigation />
      <a class="skip" href="#main">
        Skip to the content
      </a>
      <header class="top">
        <span class="brand">queueflow studio</span>
        <nav aria-label="Views">
          <NavLink href="/">Runs</NavLink>
          <NavLink href="/queues">Queues</NavLink>
          <NavLink href="/workers">Workers</NavLink>
          <NavLink href="/mailboxes">Mailboxes</NavLink>
          <NavLink href="/agents">Agents</NavLink>
          <NavLink href="/conversations">Conversations</NavLink>
        </nav>
        <span class="spacer" />
        {config.readOnly && (
          <span class="badge read-only" data-testid="read-only">
            read-only
          </span>
        )}
        <LiveBadge />
      </header>
      <main id="main" tabIndex={-1}>
        <Switch>
          <Route path="/" component={RunsView} />
          <Route path="/runs/:id">
            {(params: { id: string }) => <RunView key={params.id} id={decodeURIComponent(params.id)} />}
          </Route>
          <Route path="/queues" component={QueuesView} />
          <Route path="/workers" component={WorkersView} />
          <Route path="/mailboxes" component={MailboxesView} />
          <Route path="/agents" component={AgentsView} />
          <Route path="/agents/:ref">
            {(params: { ref: string }) => <AgentView key={params.ref} address={decodeURIComponent(params.ref)} />}
          </Route>
          <Route path="/conversations" component={ConversationsView} />
          <Route path="/conversations/:id">
            {(params: { id: string }) => <ConversationView key={params.id} id={decodeURIComponent(params.id)} />}
          </Route>
          <Route>
            <h1>Not here</h1>
            <p>
              No view at this address. <Link href="/">See the runs</Link>.
            </p>
          </Route>
        </Switch>
      </main>
    </Router>
  );
}
