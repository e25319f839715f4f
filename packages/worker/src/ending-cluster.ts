import { Cluster, type ClusterNode, type ClusterOptions } from 'ioredis';

/** The ioredis Cluster internals {@link EndingCluster} reaches (private in its typings). */
interface ClusterInternals {
  startupNodes: ClusterNode[];
  handleCloseEvent(reason?: Error): void;
}

/**
 * An ioredis `Cluster` that a `disconnect()` always ends, as a single `Redis`: status `end`, an
 * `end` event, and a `connect()` still pending rejected. Whoever waits for one of them (BullMQ's
 * `worker.close()` waits for both, after a failover) is then not left waiting for good.
 *
 * Why: a Cluster ends when its node pool drains, through a `close` handler that each `connect()`
 * arms once. A disconnect while the pool is already empty (status `reconnecting` after a failover,
 * or a `connect()` still fetching the slots) drains nothing, and a drain after that handler was
 * spent (a failover's reconnect cycles) sets `close` with nobody to end it: ioredis then never emits
 * `end` (redis/ioredis #352 notes the case; #1864 is open on it). This class ends such a stranded
 * cluster itself, once the events of its own close had their turn. A `connect()` whose ready check
 * fails (the cluster's state is `fail` during a failover) reconnects in a loop and its promise never
 * settles, even once the client is closed. `duplicate()` (BullMQ's blocking connection is one) makes
 * an `EndingCluster` too.
 */
export class EndingCluster extends Cluster {
  override disconnect(reconnect = false): void {
    let ended = false;
    const onEnd = (): void => {
      ended = true;
    };
    if (!reconnect) this.once('end', onEnd);
    super.disconnect(reconnect);
    // ioredis emits status events on the next tick: by setImmediate its own handler has run.
    if (!reconnect)
      setImmediate(() => {
        this.off('end', onEnd);
        if (!ended && this.nodes('all').length === 0) this.end();
      });
  }

  /**
   * As ioredis `Cluster.connect()`, and rejects if the cluster ends first (as a single `Redis`'s
   * does): a Cluster's `connect()` made during a failover otherwise stays pending for good when the
   * client is closed, and so does whoever awaits it (BullMQ's wait for the next job does).
   */
  override connect(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onEnd = (): void => reject(new Error('Connection is closed.'));
      this.once('end', onEnd);
      super
        .connect()
        .then(resolve, reject)
        .finally(() => this.off('end', onEnd));
    });
  }

  override duplicate(overrideStartupNodes: ClusterNode[] = [], overrideOptions: ClusterOptions = {}): EndingCluster {
    const startupNodes =
      overrideStartupNodes.length > 0
        ? overrideStartupNodes
        : (this as unknown as ClusterInternals).startupNodes.slice(0);
    return new EndingCluster(startupNodes, { ...this.options, ...overrideOptions });
  }

  /**
   * Ends a cluster that was disconnected, has no node left, and did not end: what ioredis does for
   * a manual close (`handleCloseEvent` with no retry: status `end`, queued commands rejected).
   */
  private end(): void {
    (this as unknown as ClusterInternals).handleCloseEvent();
  }
}
