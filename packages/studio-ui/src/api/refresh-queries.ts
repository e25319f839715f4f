import type { QueryClient, QueryFilters } from '@tanstack/preact-query';

/**
 * Reads the queries `filters` match again, because what they show has changed.
 *
 * TanStack Query's `invalidateQueries` alone is not enough: it restarts the read of a query that
 * has data, but joins a first read still under way. That read may have been answered before the
 * change, and its answer then stands as fresh: the page's queries never go stale by themselves
 * (`staleTime: Infinity`), so a page opened just as its run ended would show the run running for
 * good. Such queries are read once more when their first read is done. (Not cancelled: a view
 * whose run changes more often than a read takes, a large fan-out's parent, would never load.)
 */
export async function refreshQueries(client: QueryClient, filters: QueryFilters = {}): Promise<void> {
  const firstReads = client
    .getQueryCache()
    .findAll(filters)
    .filter((query) => query.state.data === undefined && query.state.fetchStatus === 'fetching');
  await client.invalidateQueries(filters); // settles once the reads it started or joined are done
  if (firstReads.length > 0) await client.invalidateQueries({ predicate: (query) => firstReads.includes(query) });
}
