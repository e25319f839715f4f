/**
 * What a `runs` event refreshes on the page, with TanStack Query's real QueryClient and observers
 * standing in for the views: reads the test answers when it chooses, so that a change can land
 * while a first read is under way (the race a page opened just as its run ended ran into).
 */
import { QueryClient, QueryObserver } from '@tanstack/preact-query';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { keys } from '../src/api/query-keys';
import type { RunChange } from '../src/api/types';
import { refreshChangedRuns } from '../src/live/refresh-changed-runs';

interface Read {
  key: readonly unknown[];
  answer(value: unknown): void;
}

/** A client as the page makes it, and a view of `key` whose reads wait in `reads`. */
function view(client: QueryClient, key: readonly unknown[], reads: Read[]) {
  const observer = new QueryObserver<unknown>(client, {
    queryKey: key,
    queryFn: () => new Promise((resolve) => reads.push({ key, answer: resolve })),
  });
  const unsubscribe = observer.subscribe(() => {});
  return { data: () => observer.getCurrentResult().data, unsubscribe };
}

const change = (runId: string, status: RunChange['status']): RunChange => ({ runId, status, steps: 2 });

let client: QueryClient;
afterEach(() => client?.clear());

describe('refreshChangedRuns', () => {
  function newClient(): QueryClient {
    client = new QueryClient({ defaultOptions: { queries: { staleTime: Infinity, retry: false } } });
    return client;
  }

  it('reads a run again when it changed while its first read was under way', async () => {
    const reads: Read[] = [];
    const run = view(newClient(), keys.run('r1'), reads);
    await vi.waitFor(() => expect(reads).toHaveLength(1));

    refreshChangedRuns(client, [change('r1', 'completed')]);
    reads[0]!.answer({ status: 'running' }); // read before the change, answered after it
    await vi.waitFor(() => expect(reads).toHaveLength(2));
    reads[1]!.answer({ status: 'completed' });
    await vi.waitFor(() => expect(run.data()).toEqual({ status: 'completed' }));
    run.unsubscribe();
  });

  it('does not cancel a first read however often its run changes: the view loads, then reads again', async () => {
    const reads: Read[] = [];
    const run = view(newClient(), keys.run('r1'), reads);
    await vi.waitFor(() => expect(reads).toHaveLength(1));
    for (let i = 0; i < 3; i++) refreshChangedRuns(client, [change('r1', 'running')]);
    reads[0]!.answer({ status: 'running' });
    await vi.waitFor(() => expect(run.data()).toEqual({ status: 'running' })); // not cancelled: shown
    await vi.waitFor(() => expect(reads.length).toBeGreaterThan(1));
    await vi.waitFor(() => {
      for (const read of reads.slice(1)) read.answer({ status: 'completed' }); // those restarted too
      expect(run.data()).toEqual({ status: 'completed' });
    });
    run.unsubscribe();
  });

  it('lets a read of a run with data finish however often the run changes, then reads it once more', async () => {
    const reads: Read[] = [];
    const run = view(newClient(), keys.run('r1'), reads);
    await vi.waitFor(() => expect(reads).toHaveLength(1));
    reads[0]!.answer({ status: 'running', steps: 1 });
    await vi.waitFor(() => expect(run.data()).toEqual({ status: 'running', steps: 1 }));

    refreshChangedRuns(client, [change('r1', 'running')]);
    await vi.waitFor(() => expect(reads).toHaveLength(2));
    for (let i = 0; i < 5; i++) refreshChangedRuns(client, [change('r1', 'running'), change('r1.1.0', 'running')]);
    reads[1]!.answer({ status: 'running', steps: 2 });
    await vi.waitFor(() => expect(run.data()).toEqual({ status: 'running', steps: 2 })); // not cancelled: shown
    await vi.waitFor(() => expect(reads).toHaveLength(3)); // one more read for the changes since
    reads[2]!.answer({ status: 'completed', steps: 3 });
    await vi.waitFor(() => expect(run.data()).toEqual({ status: 'completed', steps: 3 }));
    expect(reads).toHaveLength(3);
    run.unsubscribe();
  });

  it('reads a run with data again, and leaves the views of other runs alone', async () => {
    const reads: Read[] = [];
    const run = view(newClient(), keys.run('r1'), reads);
    const other = view(client, keys.run('r2'), reads);
    await vi.waitFor(() => expect(reads).toHaveLength(2));
    for (const read of reads.splice(0)) read.answer({ status: 'running' });
    await vi.waitFor(() => expect(run.data()).toEqual({ status: 'running' }));

    refreshChangedRuns(client, [change('r1', 'completed')]);
    await vi.waitFor(() => expect(reads.map((read) => read.key)).toEqual([keys.run('r1')]));
    reads[0]!.answer({ status: 'completed' });
    await vi.waitFor(() => expect(run.data()).toEqual({ status: 'completed' }));
    expect(other.data()).toEqual({ status: 'running' });
    run.unsubscribe();
    other.unsubscribe();
  });

  it("a child's change refreshes the child, its parent's run and the parent's children pages, not the runs list", async () => {
    const reads: Read[] = [];
    newClient();
    const views = [
      view(client, keys.run('p'), reads),
      view(client, [...keys.children('p'), 0, 50], reads),
      view(client, keys.run('p.1.7'), reads),
      view(client, keys.history('p.1.7'), reads),
      view(client, [...keys.runs, { offset: 0, limit: 50 }], reads),
      view(client, [...keys.children('q'), 0, 50], reads),
    ];
    await vi.waitFor(() => expect(reads).toHaveLength(views.length));
    for (const read of reads.splice(0)) read.answer({});
    await vi.waitFor(() => expect(views.every((v) => v.data() !== undefined)).toBe(true));

    refreshChangedRuns(client, [change('p.1.7', 'completed')]);
    await vi.waitFor(() => expect(reads).toHaveLength(4));
    expect(reads.map((read) => read.key)).toEqual(
      expect.arrayContaining([keys.run('p'), [...keys.children('p'), 0, 50], keys.run('p.1.7'), keys.history('p.1.7')]),
    );
    for (const v of views) v.unsubscribe();
  });
});
