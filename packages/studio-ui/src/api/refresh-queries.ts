import type { QueryClient, QueryFilters } from '@tanstack/preact-query';

/**
 * Reads the queries `filters` match again, because what they show has changed.
 *
 * TanStack Query's `invalidateQueries` alone is not enough: it joins a first read still under way
 * instead of starting another (it cancels only the refetch of a query that has data). That read
 * may have been answered before the change, and its answer then stands as fresh: the page's
 * queries never go stale by themselves (`staleTime: Infinity`), so a page opened just as its run
 * ended would show the run running for good. Reads under way are therefore cancelled first; then
 * every matching query a view shows is read anew.
 */
export async function refreshQueries(client: QueryClient, filters: QueryFilters = {}): Promise<void> {
  await client.cancelQueries(filters);
  await client.invalidateQueries(filters);
}
