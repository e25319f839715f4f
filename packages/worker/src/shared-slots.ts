import type { Job, Worker } from 'bullmq';
import PQueue from 'p-queue';

/**
 * The `concurrency` slots of one queue of a worker, shared by the BullMQ workers of the
 * partitions it serves (one BullMQ worker per partition's queue: BullMQ counts concurrency per
 * worker). A job a partition fetched takes a slot when one is free, the job of the highest
 * priority first (as BullMQ orders one queue: no priority first, then 1, 2, …; p-queue).
 *
 * Each partition fetches no further ahead than it must: its running jobs and as many as there are
 * free slots, and at least one (BullMQ's least), so that a partition with nothing running holds
 * its head: the step of the highest priority there, which then competes for a slot with the other
 * partitions' heads. A worker so holds at most `concurrency` plus one job per partition locked;
 * the rest stay in their queues for other workers. Priority is exact within a partition (BullMQ's
 * queue) and among the heads a worker holds.
 */
export class SharedSlots {
  private readonly slots: PQueue;
  private readonly consumers = new Map<Worker, { running: number }>();

  constructor(private readonly concurrency: number) {
    this.slots = new PQueue({ concurrency });
  }

  /** Adds the BullMQ worker of one partition's queue (created with `concurrency` as its own). */
  add(worker: Worker): void {
    this.consumers.set(worker, { running: 0 });
    this.adjust();
  }

  /** Runs `task`, for a job `worker` fetched, once a slot is free. */
  async run<T>(worker: Worker, job: Job, task: () => Promise<T>): Promise<T> {
    const counts = this.consumers.get(worker)!;
    const ran = this.slots.add(
      async () => {
        counts.running++;
        this.adjust();
        try {
          return await task();
        } finally {
          counts.running--;
        }
      },
      { priority: slotPriority(job), throwOnTimeout: true },
    );
    this.adjust(); // a job fetched: one slot fewer to fetch for
    try {
      return await ran;
    } finally {
      this.adjust();
    }
  }

  /** Sets how far ahead each partition's BullMQ worker fetches (read by it before each fetch). */
  private adjust(): void {
    // Slots neither running nor promised to a job fetched already.
    const free = Math.max(0, this.concurrency - this.slots.pending - this.slots.size);
    // BullMQ fetches at least one job: a partition with none running so holds its head.
    for (const [worker, { running }] of this.consumers) worker.concurrency = Math.max(1, running + free);
  }
}

/** p-queue's priority (larger first) of a job of BullMQ priority `job.opts.priority` (1 highest; none before all). */
function slotPriority(job: Job): number {
  const priority = job.opts.priority;
  return priority === undefined || priority === 0 ? Number.MAX_SAFE_INTEGER : -priority;
}
