import { hostname } from 'node:os';
import type { MessagePort } from 'node:worker_threads';
import type { Job } from 'bullmq';
import { DEFAULT_QUEUE } from '@queueflow/runtime';
import { connectionSource, type ConnectionOption, type RedisConnection } from './connection.js';
import { HeartbeatState, monotonicMs, type FromHeartbeat, type ToHeartbeat } from './heartbeat-state.js';
import { joinHeartbeatThread } from './heartbeat-host.js';
import { jobsMeta, type RegistryKeys } from './worker-registry.js';
import { withScripts } from './scripts.js';

/** Whether a process `pid` exists on this host (a stopped one does; signal 0 only checks). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
import type { BudgetHold, RunStore, StoredWorker, WorkerBeat } from '@queueflow/runtime/kernel';
import { taskOfJob, type BullmqScheduler } from './bullmq-scheduler.js';

/** How often a worker tells the store it is alive, in ms. */
const HEARTBEAT_INTERVAL_MS = 2000;

/** Longest a worker's start waits for its heartbeat thread's connection, in ms. */
const THREAD_READY_MS = 10_000;

/** How often the main event loop tells the heartbeat thread it turns, in ms. */
const LOOP_TICK_MS = 250;

/** How long the main event loop may go without a turn and its worker still beat, in ms (HeartbeatOptions.maxLoopLagMs). */
export const DEFAULT_MAX_LOOP_LAG_MS = 60_000;

/**
 * How long a worker may go without a heartbeat and still count as live, in ms: three missed
 * beats. A dead worker's steps are taken over within about this plus one interval.
 */
export const WORKER_LAPSE_MS = 3 * HEARTBEAT_INTERVAL_MS;

export interface HeartbeatOptions {
  /** What the worker says of itself, but for `active`, read at each beat. */
  worker: Omit<WorkerBeat, 'active'>;
  /** Steps it runs now. */
  active: () => number;
  /** The ids of the jobs it runs now (named by beats from the main thread; the thread is told as they change). */
  jobs: () => Iterable<string>;
  /** How long a worker may go without a heartbeat before its steps are handed back, in ms. */
  lapseMs: number;
  /**
   * Times a step may stall before it fails for good (BullMQ `maxStalledCount`): a step handed
   * back from a lapsed worker counts as a stall, as one BullMQ's stalled-job check finds does.
   */
  maxStalledCount: number;
  /**
   * How long the main event loop may go without a turn before the heartbeat thread stops beating
   * (the worker is then taken over as a dead one), in ms. @defaultValue 60000
   */
  maxLoopLagMs: number;
  /**
   * Where the heartbeat thread connects, and whether its connection runs ioredis's ready check:
   * the worker's own connection option. Options that cannot cross to a thread (functions, such
   * as a `retryStrategy`) make the main thread beat instead.
   */
  thread: { connection: ConnectionOption | undefined; readyCheck: boolean; keys: RegistryKeys };
  /** A line for the log. */
  log: (line: string) => void;
  onError: (error: Error) => void;
  /**
   * Told when a beat finds this worker fenced: another worker claimed it (its heartbeat had
   * lapsed while it lived) and took its steps over. The worker stops its steps and {@link
   * WorkerHeartbeat.rejoin}s under a new id.
   */
  onFenced: () => void;
  /** Also done at every beat, before it (the worker measures its clock's offset to the server's). */
  onBeat?: () => Promise<unknown>;
  /**
   * Recovery work done at each interval beside the beat, never delaying it (its length has no
   * bound: finishing a dead canceller's cascade over a large fan-out). Each sweep runs one at a
   * time (the next run starts at the first interval after the last ended), apart from the others;
   * its errors go to `onError`. `signal` aborts when the heartbeat stops: a sweep then ends soon,
   * leaving the rest to others.
   */
  sweeps?: readonly ((signal: AbortSignal) => Promise<unknown>)[];
  /** Makes due the tasks a worker took to run itself and did not run (StepDriver.recoverTaken). */
  recoverTaken: (taskIds: readonly string[]) => Promise<void>;
  /** The concurrency leases of a node's `limits` this worker holds now (StepDriver.budgetHolds). */
  leases: () => readonly BudgetHold[];
  /** Gives back the leases a dead worker held, and wakes their waiters. */
  releaseLeases: (holds: readonly BudgetHold[]) => Promise<void>;
}

/**
 * A worker's heartbeat (DESIGN "Operating runs"). Every {@link HEARTBEAT_INTERVAL_MS} a thread of
 * its own records the worker in the store's worker registry (heartbeat-thread.ts), so that a main
 * event loop starved of CPU does not make a live worker look dead; and the main thread looks for
 * workers whose heartbeat lapsed, on the store's clock. The first worker to claim a lapsed one
 * (an atomic claim: exactly one does) hands that worker's active steps back to the queue at once,
 * with the lock tokens the dead worker held (BullMQ's `moveToWait`), instead of waiting for the
 * lock to expire and a stalled-job check to see it (30 to 45 s with BullMQ's defaults).
 *
 * A worker that was only paused (SIGSTOP, a VM migration, a laptop lid) past the lapse is claimed
 * the same way. When it comes back, its next beat finds it fenced: it stops its steps, drops
 * their results and rejoins under a new id ({@link HeartbeatOptions.onFenced}); a late commit of
 * its would be refused by the step counter.
 */
export class WorkerHeartbeat {
  private timer: NodeJS.Timeout | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  /** The run of each sweep under way, by its index in `sweeps`. */
  private readonly sweeping = new Map<number, Promise<unknown>>();
  private readonly stopping = new AbortController();
  private readonly state = new HeartbeatState();
  /**
   * This worker's port to the heartbeat thread (heartbeat-host.ts); `undefined` when the main
   * thread beats (see HeartbeatOptions.thread).
   */
  private thread: MessagePort | undefined;
  private worker: Omit<WorkerBeat, 'active'>;
  /** Set while a fence is being handled: `onFenced` is told once per incarnation. */
  private fenced = false;

  constructor(
    private readonly store: RunStore,
    private readonly scheduler: BullmqScheduler,
    private readonly redis: RedisConnection,
    private readonly options: HeartbeatOptions,
  ) {
    this.worker = options.worker;
  }

  /** This worker's id in the registry now (a new one after each rejoin). */
  get workerId(): string {
    return this.worker.id;
  }

  /** Records the worker now, then beats every interval from its thread. */
  async start(): Promise<void> {
    await this.store.heartbeat({ ...this.worker, active: this.options.active() }, true);
    this.tick();
    this.ticker = setInterval(() => this.tick(), LOOP_TICK_MS);
    this.ticker.unref();
    this.thread = this.startThread();
    await this.threadReady();
    this.timer = setInterval(() => {
      // The main thread beats until the heartbeat thread's first beat (starting a thread takes a
      // moment, more on a loaded machine), and again should the thread die.
      const threadBeats = this.thread !== undefined && this.state.beatAt > 0;
      this.beating ??= (threadBeats ? this.onBeat() : this.onBeat().then(() => this.beatHere()))
        .then(() => this.takeOverLapsed())
        .catch(this.options.onError)
        .finally(() => (this.beating = undefined));
      this.options.sweeps?.forEach((sweep, i) => {
        if (this.sweeping.has(i) || this.stopping.signal.aborted) return;
        const run = sweep(this.stopping.signal)
          .catch(this.options.onError)
          .finally(() => this.sweeping.delete(i));
        this.sweeping.set(i, run);
      });
    }, HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
  }

  /**
   * Records the worker again under `id`, after it was fenced (its old id's steps are others' now),
   * before it takes another step: a worker that died unregistered would be taken over by nobody.
   */
  async rejoin(id: string): Promise<void> {
    this.worker = { ...this.worker, id };
    await this.store.heartbeat({ ...this.worker, active: this.options.active() }, true);
    this.fenced = false;
    this.thread?.postMessage({ type: 'rejoin', worker: this.worker } satisfies ToHeartbeat);
  }

  /**
   * Stops beating and leaves the registry (a clean stop: nothing to take over). Tasks it took
   * and did not run (wakes, CommitFields.takenBy; children, RunStore.createChildren) are made due.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.ticker);
    this.stopping.abort();
    await Promise.all([this.beating?.catch(() => {}), ...this.sweeping.values(), this.stopThread()]);
    await this.store
      .claimTaken(this.worker.id)
      .then((taken) => this.options.recoverTaken(taken))
      .catch(() => {});
    await this.store.removeWorker(this.worker.id).catch(() => {});
  }

  /**
   * A try took concurrency leases: the registry names them at once (a beat now), so that a worker
   * that dies right after is not left holding them until their lease ends.
   */
  leasesTaken(): void {
    this.noteLeases(true);
  }

  /**
   * Job `id` started (`running`) or ended here: the heartbeat thread's next beat names the jobs
   * running (`meta.jobs`), so that a worker that gets one back from BullMQ's stalled-job check
   * (its lock expired: this worker died, or its main loop stayed blocked past the lock) knows
   * whose it was (the run's `taken-over` event). Told at once, not at a tick: a step that blocks
   * the main loop as it starts is the one to name.
   */
  jobRunning(id: string, running: boolean): void {
    this.thread?.postMessage({ type: 'job', id, running } satisfies ToHeartbeat);
  }

  /** The main loop's turn: what the heartbeat thread reports. */
  private tick(): void {
    this.state.loopTickAt = monotonicMs();
    this.state.active = this.options.active();
    this.noteLeases(false); // given back since: said at the next beat
  }

  /**
   * Tells the heartbeat thread the leases held now; `beatNow`: records them at once from this
   * thread (whose loop runs: it just took them), as the heartbeat thread may not have started yet
   * or be between beats.
   */
  private noteLeases(beatNow: boolean): void {
    const leases = JSON.stringify(this.options.leases());
    if (leases === this.worker.meta?.leases) return;
    this.worker = { ...this.worker, meta: { ...this.worker.meta, leases } };
    this.thread?.postMessage({ type: 'leases', leases } satisfies ToHeartbeat);
    if (beatNow && this.timer) void this.beatHere().catch(this.options.onError);
  }

  /** Joins the process's heartbeat thread, or says why the main thread beats instead. */
  private startThread(): MessagePort | undefined {
    let connection: ConnectionOption | undefined;
    try {
      connection = structuredClone(connectionSource(this.options.thread.connection));
    } catch {
      this.options.log(
        'the connection options cannot cross to a thread (functions?): heartbeats come from the main thread, ' +
          'so a main loop starved of CPU for the lapse may be taken for dead',
      );
      return undefined;
    }
    const port = joinHeartbeatThread(
      {
        connection,
        readyCheck: this.options.thread.readyCheck,
        keys: this.options.thread.keys,
        worker: this.worker,
        intervalMs: HEARTBEAT_INTERVAL_MS,
        maxLoopLagMs: this.options.maxLoopLagMs,
        state: this.state.buffer,
      },
      this.options.onError,
    );
    if (!port) return undefined; // run from sources (tsx): no compiled thread
    port.on('message', (message: FromHeartbeat) => {
      if (message.type === 'fenced') this.fence(message.id);
      else if (message.type === 'error') this.options.onError(new Error(`heartbeat: ${message.message}`));
      else if (message.type === 'stuck')
        this.options.log(
          `the main event loop has not run for ${Math.round(message.lagMs / 100) / 10} s: no heartbeat until it runs ` +
            '(other workers take this one over once its heartbeat lapses)',
        );
    });
    port.unref(); // as the thread: it holds no process open
    port.once('close', () => {
      if (this.thread === port) this.thread = undefined; // the main thread beats from now on
    });
    return port;
  }

  /**
   * Waits for the heartbeat thread's connection (so a worker that says it is ready has every
   * connection it keeps open), at most {@link THREAD_READY_MS}: the main thread beats meanwhile.
   */
  private async threadReady(): Promise<void> {
    const port = this.thread;
    if (!port) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, THREAD_READY_MS);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        port!.off('message', onMessage);
        port!.off('close', done);
        resolve();
      }
      function onMessage(message: FromHeartbeat): void {
        if (message.type === 'ready') done();
      }
      port.on('message', onMessage);
      port.unref(); // a `message` listener refs the port again
      port.once('close', done);
    });
  }

  /** Stops this worker's beats in the heartbeat thread (which goes on for the process's other workers). */
  private async stopThread(): Promise<void> {
    const port = this.thread;
    if (!port) return;
    this.thread = undefined;
    const stopped = new Promise<void>((resolve) => {
      port.on('message', (message: FromHeartbeat) => message.type === 'stopped' && resolve());
      port.once('close', () => resolve());
      setTimeout(resolve, 2000).unref();
    });
    port.postMessage({ type: 'stop' } satisfies ToHeartbeat);
    await stopped;
    port.close();
  }

  /** A beat from the main thread (no heartbeat thread). */
  private async beatHere(): Promise<void> {
    if (this.fenced) return;
    const { id } = this.worker;
    const meta = { ...this.worker.meta, ...jobsMeta(this.options.jobs()) };
    const reply = await this.store.heartbeat({ ...this.worker, meta, active: this.options.active() });
    if (reply === 'fenced') this.fence(id);
  }

  private fence(id: string): void {
    if (this.fenced || id !== this.worker.id) return;
    this.fenced = true;
    this.options.onFenced();
  }

  private onBeat(): Promise<unknown> {
    return this.options.onBeat?.() ?? Promise.resolve();
  }

  /** Hands back the active steps of every worker whose heartbeat lapsed and that this one claimed. */
  private async takeOverLapsed(): Promise<void> {
    const lapsed = await this.store.claimLapsed(this.options.lapseMs);
    for (const dead of lapsed) {
      const taken = await this.handBack(dead);
      const leases = await this.releaseLeasesOf(dead);
      // Parked runs it had woken and children it had started, to run itself: due now.
      const woken = await this.store.claimTaken(dead.id);
      await Promise.all(woken.map((id) => this.noteTakeover(runOfTaskId(id), dead.id)));
      await this.options.recoverTaken(woken);
      // How long it was silent, on the store's clock (this worker's own may have been paused).
      const ago = Math.round((dead.silentMs ?? this.options.lapseMs) / 100) / 10;
      this.options.log(
        `worker ${dead.id} (${dead.host} pid ${dead.pid}) stopped heartbeating ${ago} s ago; ` +
          (taken.length === 0 ? 'it held no steps' : `took over ${taken.length} step(s): ${taken.join(', ')}`) +
          (woken.length === 0 ? '' : `; made due ${woken.length} task(s) it had taken: ${woken.join(', ')}`) +
          leases,
      );
    }
  }

  /**
   * Gives back the concurrency slots a claimed worker held (its beats named them), once it is known
   * dead: a worker on this host whose process still exists is only paused (SIGSTOP) or starved, and
   * keeps its slots until it fences itself (which gives them back) or their lease ends. A worker on
   * another host cannot be told from a dead one: its slots go back now. What the log line adds.
   */
  private async releaseLeasesOf(dead: StoredWorker): Promise<string> {
    let holds: BudgetHold[];
    try {
      holds = JSON.parse(dead.meta?.leases ?? '[]') as BudgetHold[];
    } catch {
      return '';
    }
    if (holds.length === 0) return '';
    if (dead.host === hostname() && processExists(dead.pid))
      return `; its process still exists (paused?): its ${holds.length} budget slot(s) stay its own until it comes back`;
    await this.options.releaseLeases(holds);
    return `; gave back its ${holds.length} budget slot(s)`;
  }

  /** Hands back the active jobs of every queue (in every partition) the dead worker served that it held the lock of. */
  private async handBack(dead: StoredWorker): Promise<string[]> {
    // One BullMQ worker per queue and partition served, their ids comma-separated.
    const bullmqIds = dead.meta?.bullmq?.split(',').filter((id) => id !== '') ?? [];
    if (bullmqIds.length === 0) return [];
    const taken: string[] = [];
    // The jobs its last beat named: one whose lock has expired already (a lock shorter than the
    // lapse) is BullMQ's stalled-job check's to give back, but noted as taken over from it here.
    const named = new Set(dead.meta?.jobs?.split(',') ?? []);
    const partitions = this.scheduler.partitions.all.map((_, partition) => partition);
    for (const [name, partition] of (dead.queues ?? [DEFAULT_QUEUE]).flatMap((name) =>
      partitions.map((partition) => [name, partition] as const),
    )) {
      const queue = this.scheduler.queueOf(name, partition);
      const active: Job[] = await queue.getActive();
      for (const job of active) {
        if (!job.id) continue;
        // The lock token of a job is `<BullMQ worker id>:<n>` (BullMQ Worker): the dead worker's own.
        const token = await this.redis.get(`${queue.toKey(job.id)}:lock`);
        if (!token && named.has(job.id)) await this.noteTakeoverOf(job, dead.id);
        if (!token || !bullmqIds.some((id) => token.startsWith(`${id}:`))) continue;
        try {
          // Counted as BullMQ's stalled-job check would (it never sees this job: its lock is
          // given back before it expires), or a step that kills its workers would run for ever.
          const stalls = await withScripts(this.redis).countStall(
            queue.toKey(job.id),
            `${queue.toKey(job.id)}:lock`,
            token,
            this.options.maxStalledCount,
          );
          if (stalls === -1) continue; // it finished or was taken meanwhile
          // Noted before the job is free to take: the worker that loads its run next logs it.
          await this.noteTakeoverOf(job, dead.id);
          await job.moveToWait(token);
          const step = await this.stepOf(job, job.id);
          const failing = Number(stalls) > this.options.maxStalledCount;
          taken.push(failing ? `${step} (stalled ${String(stalls)} times: it fails)` : step);
        } catch {
          // It finished or was taken meanwhile.
        }
      }
    }
    return taken;
  }

  /** The run of a job taken from `from` (a fan-out item's has no step of its own) says so. */
  private async noteTakeoverOf(job: Job, from: string): Promise<void> {
    const task = taskOfJob(job);
    if (task.type !== 'item') await this.noteTakeover(task.runId, from);
  }

  /** The run's event log says who took its step over from `from` (RunStore.noteTakeover). */
  private async noteTakeover(runId: string | undefined, from: string): Promise<void> {
    if (runId !== undefined) await this.store.noteTakeover?.(runId, from).catch(() => {});
  }

  /**
   * Names the step a taken-over job was running: its task's id, or, when the dead worker had run
   * its run's steps on past the job's own (WorkerOptions.continueSteps), the step the run
   * stands at, then the job's id.
   */
  private async stepOf(job: Job, jobId: string): Promise<string> {
    const task = taskOfJob(job);
    if (task.type === 'item') return jobId;
    const at = await this.store.position(task.runId).catch(() => undefined);
    return at && at.step !== task.step ? `${task.runId}-${at.step} (job ${jobId})` : jobId;
  }
}

/** The run of a task id a worker took (a wake `<run>-<step>-p<n>`, a child's first step `<run>-0`). */
function runOfTaskId(taskId: string): string | undefined {
  return /^(.+)-\d+(?:-p\d+)?$/.exec(taskId)?.[1];
}
