import type { StreamEntry } from './engine.js';
import { isFinal, type RunStore } from './run-store.js';

/** Entries read per store call. */
const PAGE = 100;

/**
 * Follows run `runId`'s stream for `engine.stream`: replays the entries after `after`, then
 * waits for new ones (`pollMs` at a time), and returns once the run has ended and every entry
 * before its end has been yielded.
 *
 * The end: the transition that ends a run appends an end marker after every entry of its steps
 * (the step driver stores a step's entries before it commits), when the run wrote entries or is
 * followed: the follower marks it so first (`followStream`). A marker is the end only if the
 * run is still ended and nothing follows it (a retried run goes on after its old marker); a
 * wait that finds nothing also looks at the run's status, so a lost marker cannot hang a
 * follower, and a run that expired ends its stream.
 *
 * @throws the error `notFound` makes when there is no such run.
 */
export async function* followStream(
  store: RunStore,
  runId: string,
  after: string,
  options: { pollMs: number; notFound: () => Error },
): AsyncGenerator<StreamEntry, void, undefined> {
  if (!(await store.followStream(runId))) throw options.notFound();
  let caughtUp = false;
  for (;;) {
    const batch = await store.readStream(runId, after, {
      count: PAGE,
      ...(caughtUp ? { blockMs: options.pollMs } : {}),
    });
    let marker = false;
    for (const stored of batch) {
      after = stored.id;
      if ('end' in stored) marker = true;
      else yield stored;
    }
    caughtUp = batch.length < PAGE;
    if (!caughtUp || (!marker && batch.length > 0)) continue;
    const position = await store.position(runId);
    if (!position) return; // expired (or deleted)
    if (isFinal(position.status) && (await store.readStream(runId, after, { count: 1 })).length === 0) return;
  }
}
