import type { Redis } from 'ioredis';
import type { RunEventListener, RunEventSource } from '@queueflow/runtime/kernel';

/** A message on the events channel (published by the scripts: run-lifecycle.lua, cancel-run.lua). */
type RunEventMessage = { type: 'ended'; runId: string; status: string } | { type: 'cancel'; runId: string };

/**
 * The Redis store's event feed: one pub/sub subscription per process, however many listeners.
 * Pub/sub loses what is published while a connection is down: after a reconnect, listeners are
 * told to `resync` (ioredis resubscribes by itself).
 */
export class RedisRunEvents implements RunEventSource {
  private readonly listeners = new Set<RunEventListener>();
  private subscribed: Promise<void> | undefined;

  constructor(
    private readonly subscriber: Redis,
    private readonly channel: string,
  ) {}

  async subscribe(listener: RunEventListener): Promise<() => void> {
    this.listeners.add(listener);
    this.subscribed ??= this.start();
    await this.subscribed;
    return () => this.listeners.delete(listener);
  }

  private async start(): Promise<void> {
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return;
      const event = parseEvent(message);
      if (!event) return;
      for (const listener of this.listeners) {
        if (event.type === 'ended') listener.ended?.(event.runId);
        else listener.cancelled?.(event.runId);
      }
    });
    this.subscriber.on('ready', () => {
      for (const listener of this.listeners) listener.resync?.();
    });
    await this.subscriber.subscribe(this.channel);
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
