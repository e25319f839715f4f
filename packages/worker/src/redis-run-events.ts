import { Cluster } from 'ioredis';
import type { RedisConnection } from './connection.js';
import type { RunChange } from '@queueflow/runtime';
import type { RunEventListener, RunEventSource } from '@queueflow/runtime/kernel';

/** How often the connection a cluster subscribes over is checked for a new one, in ms. */
const CLUSTER_SUBSCRIBER_CHECK_MS = 1000;

/** A message on the events channel (published by the scripts: run-lifecycle.lua, cancel-run.lua). */
type RunEventMessage =
  { type: 'ended'; runId: string; status: string } | { type: 'cancel'; runId: string; retries?: number };

/**
 * The Redis store's event feed: one pub/sub subscription per process, however many listeners.
 * Pub/sub loses what is published while a connection is down: after a reconnect, listeners are
 * told to `resync` (ioredis resubscribes by itself), and so on a cluster when ioredis moves the
 * subscription to another node.
 */
export class RedisRunEvents implements RunEventSource {
  private readonly listeners = new Set<RunEventListener>();
  private subscribed: Promise<void> | undefined;
  private changes: Promise<void> | undefined;

  constructor(
    private readonly subscriber: RedisConnection,
    private readonly channel: string,
    /** The changes channel, subscribed only once a listener wants changes (live views). */
    private readonly changesChannel?: string,
  ) {}

  async subscribe(listener: RunEventListener): Promise<() => void> {
    this.listeners.add(listener);
    this.subscribed ??= this.start();
    await this.subscribed;
    if (listener.changed && this.changesChannel) {
      this.changes ??= this.subscriber.subscribe(this.changesChannel).then(() => undefined);
      await this.changes;
    }
    return () => this.listeners.delete(listener);
  }

  private async start(): Promise<void> {
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === this.changesChannel) {
        const change = parseChange(message);
        if (change) for (const listener of this.listeners) listener.changed?.(change);
        return;
      }
      if (channel !== this.channel) return;
      const event = parseEvent(message);
      if (!event) return;
      for (const listener of this.listeners) {
        if (event.type === 'ended') listener.ended?.(event.runId);
        else listener.cancelled?.(event.runId, typeof event.retries === 'number' ? event.retries : undefined);
      }
    });
    this.subscriber.on('ready', () => void this.resync());
    if (this.subscriber instanceof Cluster) this.watchClusterSubscriber(this.subscriber);
    await this.subscriber.subscribe(this.channel);
  }

  /**
   * On a cluster, ioredis subscribes over one node's connection and, when that connection ends (its
   * node failed or dropped it), picks another node and subscribes again by itself, telling no one:
   * no `ready`, and what was published in between is lost. So the connection in use is looked at
   * every second, and a new one leads to a resync. It is ioredis's ClusterSubscriber (not public
   * API, checked in the 5.x line): should a version not have it, this check finds nothing to
   * compare and stays off.
   */
  private watchClusterSubscriber(cluster: Cluster): void {
    const inUse = (): unknown =>
      (cluster as unknown as { subscriber?: { getInstance?: () => unknown } }).subscriber?.getInstance?.() ?? undefined;
    let seen = inUse();
    const timer = setInterval(() => {
      if (cluster.status === 'end') return clearInterval(timer);
      const now = inUse();
      if (now === undefined || now === seen) return;
      seen = now;
      void this.resync();
    }, CLUSTER_SUBSCRIBER_CHECK_MS);
    timer.unref();
  }

  /**
   * After a reconnect: ioredis subscribes again to the channels once it has emitted `ready`, so
   * the listeners are told to read again only once a SUBSCRIBE of ours, sent after those on the
   * same connection, has been answered (Redis ignores a SUBSCRIBE to a channel already
   * subscribed). What they read then is followed by every later event. Should the connection drop
   * again meanwhile, the next `ready` does this again.
   */
  private async resync(): Promise<void> {
    const channels = this.changes && this.changesChannel ? [this.channel, this.changesChannel] : [this.channel];
    try {
      await this.subscriber.subscribe(...channels);
    } catch {
      return;
    }
    for (const listener of this.listeners) listener.resync?.();
  }
}

function parseEvent(message: string): RunEventMessage | undefined {
  try {
    const event = JSON.parse(message) as RunEventMessage;
    return typeof event.runId === 'string' ? event : undefined;
  } catch {
    return undefined;
  }
}

function parseChange(message: string): RunChange | undefined {
  try {
    const change = JSON.parse(message) as RunChange;
    return typeof change.runId === 'string' ? change : undefined;
  } catch {
    return undefined;
  }
}
