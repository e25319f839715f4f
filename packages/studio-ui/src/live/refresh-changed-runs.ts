import type { QueryClient } from '@tanstack/preact-query';
import { keys } from '../api/query-keys';
import { refreshQueries } from '../api/refresh-queries';
import type { RunChange } from '../api/types';

/**
 * Reads again what a batch of run changes (a `runs` event) makes out of date: the runs lists when
 * a top-level run changed, each changed run and its step history, its parent's progress and the
 * parent's children pages, the agents and conversations shown (an agent's turn is a top-level
 * run), and a conversation's turn shown. A fan-out child's id is its parent's followed by
 * `.<step>.<index>`.
 */
export function refreshChangedRuns(client: QueryClient, changes: RunChange[]): void {
  if (changes.some((change) => !change.runId.includes('.'))) {
    void refreshQueries(client, { queryKey: keys.runs });
    void refreshQueries(client, { queryKey: keys.agents });
    // A conversation changes with its turns (top-level runs): its messages, waits and spend.
    void refreshQueries(client, { queryKey: keys.conversations });
  }
  void refreshQueries(client, {
    queryKey: ['children'],
    predicate: (query) => {
      const parent = query.queryKey[1] as string;
      return changes.some((change) => change.runId === parent || change.runId.startsWith(`${parent}.`));
    },
  });
  // Each run once, however many of its children changed in the batch.
  const runs = new Set<string>();
  for (const { runId } of changes) {
    runs.add(runId);
    const parent = runId.split('.').slice(0, -2).join('.');
    if (parent) runs.add(parent);
  }
  for (const runId of runs) void refreshQueries(client, { queryKey: keys.run(runId) });
  for (const { runId } of changes) {
    void refreshQueries(client, { queryKey: keys.history(runId) });
    void refreshQueries(client, { queryKey: keys.runEvents(runId) });
    void refreshQueries(client, { queryKey: keys.conversationTurn(runId) });
  }
}
