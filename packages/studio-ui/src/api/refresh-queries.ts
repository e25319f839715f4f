import type { Query, QueryClient, QueryFilters } from '@tanstack/preact-query';

/** Queries that read again once their read under way is done. */
const readAgain = new WeakSet<Query>();

/**
 * Reads the queries `filters` match again, because what they show has changed: an idle one now,
 * one being read once that read is done. The read under way may have been answered before the
 * change, and the page's queries never go stale by themselves (`staleTime: Infinity`): without
 * the second read, a page opened just as its run ended would show it running for good.
 *
 * Not TanStack Query's `invalidateQueries` alone: it joins a first read under way (so its answer,
 * maybe older than the change, stands), and cancels and restarts the read of a query with data,
 * so a view whose run changes more often than a read takes (a large fan-out's parent) would never
 * get an answer. Here a query has at most one read under way and one to come.
 */
export function refreshQueries(client: QueryClient, filters: QueryFilters = {}): Promise<void> {
  const idle: Query[] = [];
  for (const query of client.getQueryCache().findAll(filters)) {
    if (query.state.fetchStatus !== 'fetching') idle.push(query);
    else if (!readAgain.has(query)) {
      readAgain.add(query);
      void query
        .fetch(undefined, { cancelRefetch: false }) // joins the read under way
        .catch(() => undefined)
        .then(() => {
          readAgain.delete(query);
          return invalidate(client, [query]);
        });
    }
  }
  return invalidate(client, idle);
}

function invalidate(client: QueryClient, queries: Query[]): Promise<void> {
  if (queries.length === 0) return Promise.resolve();
  return client.invalidateQueries({ predicate: (query) => queries.includes(query) }, { cancelRefetch: false });
}
