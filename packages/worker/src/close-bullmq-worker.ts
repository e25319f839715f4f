import type { Worker } from 'bullmq';

/**
 * The part of a BullMQ `Worker`'s private state {@link closeBullmqWorker} reaches: its blocking
 * connection, a BullMQ `RedisConnection` (whose `close(force)` is public on that class).
 */
interface BlockingConnectionOf {
  blockingConnection?: { close(force?: boolean): Promise<void> };
}

/**
 * Closes a BullMQ worker as `worker.close()` does (waits for its active jobs to finish and commit,
 * then closes its connections), without the hang BullMQ 5.81 can have after a Redis Cluster
 * failover.
 *
 * Why: the worker's blocking connection serves only its wait for the next job (`BZPOPMIN`), which
 * a closing worker no longer makes. BullMQ's close disconnects it first, but leaves it open to
 * reconnects until a later step (`RedisConnection.close`): after a failover, the wait in flight
 * fails and BullMQ reconnects the cluster client it is closing (its cluster `BZPOPMIN` wrapper), or
 * its watchdog loops in `RedisConnection.reconnect()` until the client is ready again, and the
 * close waits for that loop for good (seen in tests/fault/park-failover, 2 closes in 5). Closing
 * the blocking connection at once, right after the worker was told to close (so that its fetch
 * loop does not reconnect it), ends those loops; the active jobs finish on the other connection.
 * Upstream: taskforcesh/bullmq #4656, #2430.
 */
export async function closeBullmqWorker(worker: Worker): Promise<void> {
  const closing = worker.close();
  await (worker as unknown as BlockingConnectionOf).blockingConnection?.close(true).catch(() => {});
  await closing;
}
