import type { Redis } from 'ioredis';
import type { RedisConnection } from './connection.js';
import { serverOfKey } from './server-of-key.js';
import { compareStreamIds as compareIds } from '@queueflow/runtime/kernel';

/** A stream entry as XRANGE and XREAD give it: its id and its flat field list. */
export type RawStreamEntry = [id: string, fields: string[]];

interface Waiter {
  key: string;
  after: string;
  resolve: (entries: RawStreamEntry[]) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** Longest one XREAD blocks, in ms: then it is issued again (with whatever keys are followed then). */
const BLOCK_MS = 30_000;
/** Entries one XREAD returns per stream. */
const COUNT = 100;

/**
 * Blocking reads of many streams over ONE connection: every follower of every run waits in the
 * same `XREAD BLOCK ... STREAMS k1 k2 ... id1 id2 ...`, re-issued as followers come and go (a
 * new one interrupts the blocked read with `CLIENT UNBLOCK` from the command connection), so
 * 1,000 clients following 1,000 runs hold one connection, not 1,000. The connection is opened on
 * the first read.
 *
 * Per stream the read starts after the smallest id any follower of it waits after; each follower
 * gets the entries after its own id, and keeps waiting when there are none.
 */
export class StreamReader {
  private readonly waiters = new Map<string, Set<Waiter>>();
  private blocking: RedisConnection | undefined;
  private loop: Promise<void> | undefined;
  /**
   * The connection the XREAD in flight blocks (on a cluster, the cluster's connection to the
   * master of the streams' slot), and its CLIENT ID (it changes when that connection is
   * re-established).
   */
  private blocked: { server: Redis; clientId: number } | undefined;
  /** The servers whose reconnections are watched (to forget their CLIENT ID). */
  private readonly watched = new WeakSet<Redis>();
  /** Counts the XREADs issued: an interrupt is for the read it was asked for. */
  private generation = 0;
  /** The keys and ids the XREAD in flight reads, while one is. */
  private inFlight: Map<string, string> | undefined;
  private interrupting = false;
  private closed = false;

  constructor(
    /** Opens the blocking connection (not connected yet). */
    private readonly open: () => RedisConnection,
    /** The command connection, which sends `CLIENT UNBLOCK`. */
    private readonly control: RedisConnection,
  ) {}

  /**
   * Entries of stream `key` after id `after` (at most 100), as soon as there is one; `[]` after
   * `timeoutMs` without any, or once the reader is closed.
   */
  read(key: string, after: string, timeoutMs: number): Promise<RawStreamEntry[]> {
    if (this.closed) return Promise.resolve([]);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        key,
        after,
        resolve,
        timer: setTimeout(() => this.settle(waiter, []), timeoutMs),
      };
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(waiter);
      this.loop ??= this.run();
      if (this.unread()) void this.interrupt();
    });
  }

  /** Ends every wait with `[]` and closes the connection. */
  async close(): Promise<void> {
    this.closed = true;
    for (const set of this.waiters.values()) for (const waiter of [...set]) this.settle(waiter, []);
    this.blocking?.disconnect();
    await this.loop?.catch(() => {});
  }

  private settle(waiter: Waiter, entries: RawStreamEntry[]): void {
    clearTimeout(waiter.timer);
    const set = this.waiters.get(waiter.key);
    if (!set?.delete(waiter)) return;
    if (set.size === 0) this.waiters.delete(waiter.key);
    waiter.resolve(entries);
  }

  /**
   * The read loop, while anyone waits. It forgets itself in the same turn as it sees no one
   * waiting, so a follower arriving right after starts a new one (no read is left hanging).
   */
  private async run(): Promise<void> {
    try {
      while (this.waiters.size > 0 && !this.closed) {
        const blocking = this.connection();
        await this.identify(blocking, [...this.waiters.keys()][0]!);
        // Waiters may have timed out during that wait: read for those still waiting.
        const keys = [...this.waiters.keys()];
        if (keys.length === 0) continue;
        const ids = keys.map((key) => smallestAfter(this.waiters.get(key)!));
        this.generation++;
        this.inFlight = new Map(keys.map((key, i) => [key, ids[i]!]));
        let reply: [string, RawStreamEntry[]][] | null;
        try {
          reply = (await blocking.call('XREAD', 'COUNT', COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', ...keys, ...ids)) as
            [string, RawStreamEntry[]][] | null;
        } catch {
          reply = null; // the connection dropped (ioredis reconnects): read again
          if (!this.closed) await new Promise((resolve) => setTimeout(resolve, 100));
        } finally {
          this.inFlight = undefined;
        }
        for (const [key, entries] of reply ?? []) {
          for (const waiter of [...(this.waiters.get(key) ?? [])]) {
            const after = entries.filter(([id]) => compareIds(id, waiter.after) > 0);
            if (after.length > 0) this.settle(waiter, after);
          }
        }
      }
    } finally {
      this.loop = undefined;
    }
  }

  private connection(): RedisConnection {
    this.blocking ??= this.open();
    return this.blocking;
  }

  /**
   * Learns the CLIENT ID of the connection an XREAD of `key` blocks, so that `CLIENT UNBLOCK`
   * can end it: asked once per connection, again after it reconnects. Without one (a cluster
   * failing over), interrupts do nothing and the read ends by itself within BLOCK_MS.
   */
  private async identify(blocking: RedisConnection, key: string): Promise<void> {
    const server = await serverOfKey(blocking, key).catch(() => undefined);
    if (!server) {
      this.blocked = undefined;
      return;
    }
    if (this.blocked?.server === server) return;
    if (!this.watched.has(server)) {
      this.watched.add(server);
      server.on('ready', () => {
        if (this.blocked?.server === server) this.blocked = undefined;
      });
    }
    this.blocked = { server, clientId: (await server.client('ID')) as number };
  }

  /** Whether a follower waits on a stream (or from an id) that the XREAD in flight does not read. */
  private unread(): boolean {
    const inFlight = this.inFlight;
    if (!inFlight) return false;
    for (const [key, waiters] of this.waiters) {
      const id = inFlight.get(key);
      if (id === undefined || compareIds(smallestAfter(waiters), id) < 0) return true;
    }
    return false;
  }

  /**
   * Interrupts the blocked XREAD so that it is issued again with what is followed now. Followers
   * arriving together get one interrupt. `CLIENT UNBLOCK` may reach the server before the XREAD
   * it is meant for (two connections): then it is sent again, briefly, until that read has ended.
   */
  private async interrupt(): Promise<void> {
    if (this.interrupting) return;
    this.interrupting = true;
    try {
      await new Promise((resolve) => setImmediate(resolve));
      const generation = this.generation;
      for (let tries = 0; tries < 200 && this.inFlight && this.generation === generation; tries++) {
        const blocked = this.blocked;
        const key = this.inFlight.keys().next().value;
        // The unblock must reach the server the read blocks on (on a cluster, the streams' master).
        const control = blocked && key !== undefined ? await serverOfKey(this.control, key) : undefined;
        if (control && blocked && (await control.client('UNBLOCK', blocked.clientId)) === 1) break;
        await new Promise((resolve) => setTimeout(resolve, Math.min(1 + tries, 20)));
      }
    } catch {
      // The command connection is down: the read ends by itself within BLOCK_MS.
    } finally {
      this.interrupting = false;
    }
    // A follower that came while this interrupt was out, after the read it ended began again.
    if (this.unread()) void this.interrupt();
  }
}

function smallestAfter(waiters: Set<Waiter>): string {
  let smallest: string | undefined;
  for (const { after } of waiters) if (smallest === undefined || compareIds(after, smallest) < 0) smallest = after;
  return smallest ?? '0-0';
}
