/**
 * The page's one event stream (`/api/events`, Server-Sent Events): run changes refresh the
 * queries that show those runs (refresh-changed-runs.ts); counts, workers and mailboxes arrive
 * whole and replace theirs.
 * After a reconnect everything is read again (events may have been missed meanwhile).
 */
import type { QueryClient } from '@tanstack/preact-query';
import { useEffect, useState } from 'preact/hooks';
import { apiUrl } from '../api/client';
import { keys } from '../api/query-keys';
import { refreshQueries } from '../api/refresh-queries';
import type { CountsBody, MailboxInfo, QueuesBody, RunChange, WorkerInfo } from '../api/types';
import { config } from '../config';
import { refreshChangedRuns } from './refresh-changed-runs';

export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'off';

type Listener = (state: LiveState, problem?: string) => void;
const listeners = new Set<Listener>();
let current: LiveState = 'connecting';
let problem: string | undefined;

function setState(state: LiveState, text?: string): void {
  current = state;
  problem = text;
  for (const listener of listeners) listener(state, text);
}

/** Opens the stream for the page's life. */
export function connectLiveEvents(client: QueryClient): void {
  const source = new EventSource(apiUrl('/api/events', { token: config.token }));
  // `hello` comes once the server watches the runs for this page (at the first connection and
  // after each reconnect): what the page read before may have changed unseen, so it reads again.
  source.addEventListener('hello', () => {
    void refreshQueries(client);
    setState('live');
  });
  source.addEventListener('error', () => setState(source.readyState === EventSource.CLOSED ? 'off' : 'reconnecting'));
  source.addEventListener('problem', (event) =>
    setState('live', (JSON.parse((event as MessageEvent<string>).data) as { message: string }).message),
  );
  source.addEventListener('runs', (event) =>
    refreshChangedRuns(client, JSON.parse((event as MessageEvent<string>).data) as RunChange[]),
  );
  source.addEventListener('counts', (event) =>
    client.setQueryData(keys.counts, JSON.parse((event as MessageEvent<string>).data) as CountsBody),
  );
  source.addEventListener('workers', (event) =>
    client.setQueryData(keys.workers, JSON.parse((event as MessageEvent<string>).data) as WorkerInfo[]),
  );
  source.addEventListener('queues', (event) =>
    client.setQueryData(keys.queues, JSON.parse((event as MessageEvent<string>).data) as QueuesBody),
  );
  source.addEventListener('mailboxes', (event) =>
    client.setQueryData(keys.mailboxes, JSON.parse((event as MessageEvent<string>).data) as MailboxInfo[]),
  );
}

/** The stream's state, for the header. */
export function useLiveState(): { state: LiveState; problem: string | undefined } {
  const [value, setValue] = useState({ state: current, problem });
  useEffect(() => {
    const listener: Listener = (state, text) => setValue({ state, problem: text });
    listeners.add(listener);
    listener(current, problem); // what changed between the first render and now
    return () => void listeners.delete(listener);
  }, []);
  return value;
}
