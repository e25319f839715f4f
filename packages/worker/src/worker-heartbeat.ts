import type { Job } from 'bullmq';
import { DEFAULT_QUEUE } from '@queueflow/runtime';
import type { RedisConnection } from './connection.js';
import type { RunStore, StoredWorker, WorkerBeat } from '@queueflow/runtime/kernel';
import { taskOfJob, type BullmqScheduler } from './bullmq-scheduler.js';

/** How often a worker tells the store it is alive, in ms. */
const HEARTBEAT_INTERVAL_MS = 2000;

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
  /** How long a worker may go without a heartbeat before its steps are handed back, in ms. */
  lapseMs: number;
  /** A line for the log. */
  log: (line: string) => void;
  onError: (error: Error) => void;
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
}

/**
 * A worker's heartbeat (DESIGN "Operating runs"): every {@link HEARTBEAT_INTERVAL_MS} it records
 * itself in the store's worker registry, and looks for workers whose heartbeat lapsed. The first
 * worker to claim a lapsed one (an atomic claim: exactly one does) hands that worker's active
 * steps back to the queue at once, with the lock tokens the dead worker held (BullMQ's
 * `moveToWait`), instead of waiting for the lock to expire and a stalled-job check to see it
 * (30 to 45 s with BullMQ's defaults). A worker that is only slow (its event loop blocked past the
 * lapse) loses its steps the same way; its late commits are refused by the step counter.
 */
export class WorkerHeartbeat {
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  /** The run of each sweep under way, by its index in `sweeps`. */
  private readonly sweeping = new Map<number, Promise<unknown>>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly store: RunStore,
    private readonly scheduler: BullmqScheduler,
    private readonly redis: RedisConnection,
    private readonly options: HeartbeatOptions,
  ) {}

  /** Records the worker now, then every interval. */
  async start(): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => {
      this.beating ??= this.beat()
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
   * Stops beating and leaves the registry (a clean stop: nothing to take over). Tasks it took
   * and did not run (wakes, CommitFields.takenBy; children, RunStore.createChildren) are made due.
   */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await Promise.all([this.beating?.catch(() => {}), ...this.sweeping.values()]);
    await this.store
      .claimTaken(this.options.worker.id)
      .then((taken) => this.options.recoverTaken(taken))
      .catch(() => {});
    await this.store.removeWorker(this.options.worker.id).catch(() => {});
  }

  private async beat(): Promise<void> {
    await this.options.onBeat?.();
    await this.store.heartbeat({ ...this.options.worker, active: this.options.active() });
  }

  /** Hands back the active steps of every worker whose heartbeat lapsed and that this one claimed. */
  private async takeOverLapsed(): Promise<void> {
    const lapsed = await this.store.claimLapsed(this.options.lapseMs);
    for (const dead of lapsed) {
      const taken = await this.handBack(dead);
      // Parked runs it had woken and children it had started, to run itself: due now.
      const woken = await this.store.claimTaken(dead.id);
      await this.options.recoverTaken(woken);
      const ago = Math.round((Date.now() - dead.lastSeenAt) / 100) / 10;
      this.options.log(
        `worker ${dead.id} (${dead.host} pid ${dead.pid}) stopped heartbeating ${ago} s ago; ` +
          (taken.length === 0 ? 'it held no steps' : `took over ${taken.length} step(s): ${taken.join(', ')}`) +
          (woken.length === 0 ? '' : `; made due ${woken.length} task(s) it had taken: ${woken.join(', ')}`),
      );
    }
  }

  /** Hands back the active jobs of every queue (in every partition) the dead worker served that it held the lock of. */
  private async handBack(dead: StoredWorker): Promise<string[]> {
    // One BullMQ worker per queue and partition served, their ids comma-separated.
    const bullmqIds = dead.meta?.bullmq?.split(',').filter((id) => id !== '') ?? [];
    if (bullmqIds.length === 0) return [];
    const taken: string[] = [];
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
        if (!token || !bullmqIds.some((id) => token.startsWith(`${id}:`))) continue;
        try {
          await job.moveToWait(token);
          taken.push(await this.stepOf(job, job.id));
        } catch {
          // It finished or was taken meanwhile.
        }
      }
    }
    return taken;
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
