import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RunCensus } from './run-census.js';
import { queuesOf, type RunChange, type StudioEngine } from './studio-engine.js';
import { countsBody } from './studio-bodies.js';

export interface StudioLiveOptions {
  /** A comment line to every open page this often, so proxies keep the stream open, in ms. @defaultValue 15000 */
  heartbeatMs?: number;
  /** Run changes are gathered this long and sent as one event, in ms. @defaultValue 200 */
  batchMs?: number;
  /** Counts are sent at most this often, in ms. @defaultValue 1000 */
  countsEveryMs?: number;
  /** Workers and mailboxes are read this often while a page is open, in ms. @defaultValue 2000 */
  snapshotEveryMs?: number;
}

/** A page listening, and the bytes it may fall behind by before it is dropped (it reconnects). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

/**
 * The studio's live updates over Server-Sent Events. However many pages are open, the engine is
 * watched through ONE `engine.watch` subscription (made when the first page connects, dropped
 * when the last leaves); its changes are batched and sent to every page as `runs` events. The
 * counts per status follow as `counts` events, at most once per `countsEveryMs`; workers,
 * mailboxes and queues (with budgets), which no run event announces (a worker starting, a message
 * sent to no one), are read once per `snapshotEveryMs` for all pages together and sent as
 * `workers` / `mailboxes` / `queues` events when they changed. When the engine's subscription is made again after a lost connection, every
 * page gets `hello` again and reads anew what it shows.
 */
export class StudioLive {
  private readonly clients = new Set<ServerResponse>();
  private readonly pending = new Map<string, RunChange>();
  private readonly options: Required<StudioLiveOptions>;
  private unwatch: Promise<(() => void) | undefined> | undefined;
  private batchTimer: NodeJS.Timeout | undefined;
  private countsTimer: NodeJS.Timeout | undefined;
  private countsSentAt = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private snapshots: NodeJS.Timeout | undefined;
  private readonly lastSnapshot: Record<'workers' | 'mailboxes' | 'queues', string | undefined> = {
    workers: undefined,
    mailboxes: undefined,
    queues: undefined,
  };
  private closed = false;

  constructor(
    private readonly engine: Pick<StudioEngine, 'watch' | 'workers' | 'mailboxes' | 'queues' | 'budgets'>,
    private readonly census: RunCensus,
    options: StudioLiveOptions = {},
  ) {
    this.options = {
      heartbeatMs: options.heartbeatMs ?? 15_000,
      batchMs: options.batchMs ?? 200,
      countsEveryMs: options.countsEveryMs ?? 1000,
      snapshotEveryMs: options.snapshotEveryMs ?? 2000,
    };
  }

  /** Pages listening now. */
  get listeners(): number {
    return this.clients.size;
  }

  /** Answers `GET …/api/events`: the response stays open until the page goes. */
  attach(req: IncomingMessage, res: ServerResponse): void {
    if (this.closed) {
      res.writeHead(503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'the studio is closing' } }));
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no', // nginx: do not buffer the stream
    });
    res.write('retry: 2000\n\n');
    this.clients.add(res);
    const leave = (): void => this.leave(res);
    req.once('close', leave);
    res.once('close', leave);
    if (this.clients.size === 1) this.start();
    // `hello` once the subscription is on: the page reads again what it read before, so no
    // change between its first reads and this moment is missed.
    void this.unwatch!.then((unwatch) => {
      if (this.clients.has(res)) this.send(res, 'hello', { at: Date.now(), watching: unwatch !== undefined });
    });
  }

  /** Ends every stream and drops the subscription (for shutting a server down). */
  async close(): Promise<void> {
    this.closed = true;
    for (const res of [...this.clients]) res.end();
    this.clients.clear();
    await this.stop();
  }

  private start(): void {
    this.unwatch ??= this.engine
      .watch((change) => this.changed(change), { resync: () => this.resync() })
      .catch((error: unknown) => {
        this.broadcast('problem', { message: `live run updates are off: ${(error as Error).message}` });
        return undefined;
      });
    this.heartbeat = setInterval(() => this.broadcastRaw(`: ping ${Date.now()}\n\n`), this.options.heartbeatMs);
    this.heartbeat.unref();
    this.snapshots = setInterval(() => void this.readSnapshots(), this.options.snapshotEveryMs);
    this.snapshots.unref();
    void this.readSnapshots();
  }

  /**
   * The engine's subscription was made again after a lost connection: changes published meanwhile
   * are gone, so every page is told `hello` again (it reads again what it shows), and the counts
   * follow.
   */
  private resync(): void {
    this.broadcast('hello', { at: Date.now(), watching: true });
    this.scheduleCounts();
  }

  private leave(res: ServerResponse): void {
    if (!this.clients.delete(res)) return;
    if (this.clients.size === 0) void this.stop();
  }

  private async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    clearInterval(this.snapshots);
    clearTimeout(this.batchTimer);
    clearTimeout(this.countsTimer);
    this.batchTimer = this.countsTimer = undefined;
    this.pending.clear();
    this.lastSnapshot.workers = this.lastSnapshot.mailboxes = this.lastSnapshot.queues = undefined;
    const unwatch = this.unwatch;
    this.unwatch = undefined;
    (await unwatch)?.();
  }

  private changed(change: RunChange): void {
    if (this.clients.size === 0) return;
    this.pending.set(change.runId, change);
    this.batchTimer ??= setTimeout(() => this.flush(), this.options.batchMs);
  }

  private flush(): void {
    this.batchTimer = undefined;
    const changes = [...this.pending.values()];
    this.pending.clear();
    if (changes.length === 0) return;
    this.broadcast('runs', changes);
    this.scheduleCounts();
  }

  /** Counts after changes: at once when none went out for `countsEveryMs`, else when that time is up. */
  private scheduleCounts(): void {
    if (this.countsTimer) return;
    const wait = Math.max(0, this.countsSentAt + this.options.countsEveryMs - Date.now());
    const changedAt = Date.now();
    this.countsTimer = setTimeout(() => {
      this.countsSentAt = Date.now();
      // Counted after the changes, not from a census taken before them.
      void this.census.get(changedAt).then(
        (census) => {
          this.countsTimer = undefined;
          this.broadcast('counts', countsBody(census));
        },
        () => (this.countsTimer = undefined), // the next change tries again
      );
    }, wait);
  }

  private async readSnapshots(): Promise<void> {
    await Promise.all([
      this.snapshot('workers', () => this.engine.workers()),
      this.snapshot('mailboxes', () => this.engine.mailboxes()),
      this.snapshot('queues', () => queuesOf(this.engine as StudioEngine)),
    ]);
  }

  private async snapshot(name: 'workers' | 'mailboxes' | 'queues', read: () => Promise<unknown>): Promise<void> {
    if (this.clients.size === 0) return;
    let data: string;
    try {
      data = JSON.stringify(await read());
    } catch {
      return; // an engine without this view, or Redis away for a moment: the page keeps what it has
    }
    if (data === this.lastSnapshot[name] || this.clients.size === 0) return;
    this.lastSnapshot[name] = data;
    this.broadcastRaw(`event: ${name}\ndata: ${data}\n\n`);
  }

  private send(res: ServerResponse, event: string, data: unknown): void {
    this.write(res, `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private broadcast(event: string, data: unknown): void {
    this.broadcastRaw(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private broadcastRaw(text: string): void {
    for (const res of this.clients) this.write(res, text);
  }

  private write(res: ServerResponse, text: string): void {
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      res.end(); // a page that stopped reading: it reconnects and reloads what it shows
      this.leave(res);
      return;
    }
    res.write(text);
  }
}
