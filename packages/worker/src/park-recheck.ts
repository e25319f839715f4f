import { Cluster } from 'ioredis';
import { decodeReplay } from '@queueflow/runtime/kernel';
import type { BullmqScheduler } from './bullmq-scheduler.js';
import type { RedisConnection } from './connection.js';
import { keySlot } from './key-slot.js';
import type { Partitions } from './partitions.js';

/** Delayed jobs read per page. */
const PAGE = 500;

/**
 * Wakes the parked runs whose wake a Redis Cluster failover may have lost. Redis replicates
 * asynchronously: a master killed (kill -9) loses the writes it had not sent to its replica yet,
 * and a send's wake of a parked run is two writes on two partitions (the mailbox's takes the
 * waiter off, the run's makes its wake due). When the run's partition loses the second, or the
 * mailbox's loses the waiter a park registered, nothing wakes the run until its park re-check
 * (`parkRecheckMs`, a minute by default).
 *
 * So at each sweep (beside the heartbeat, every 2 s) this reads which master serves each
 * partition (CLUSTER SLOTS); once that changed for some, it makes due the delayed wakes of the
 * partitions and queues this worker serves whose run lives in one of those partitions or is
 * parked on a mailbox that does. Each woken run looks at its mailbox again: it takes the message
 * that came, or parks again (registering its waiter again). One command per sweep on a cluster,
 * none on one server; the wakes are read and made due only after a failover.
 */
export class ParkRecheck {
  /** The master's node id (else its address) serving each partition, as last read. */
  private masters: (string | undefined)[] | undefined;
  /** Partitions whose master changed and whose parks are not re-checked yet. */
  private readonly pending = new Set<number>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly partitions: Partitions,
    private readonly scheduler: BullmqScheduler,
    private readonly options: {
      /** The partitions this worker serves (their queues hold the wakes it runs). */
      served: readonly number[];
      /** The queues this worker serves. */
      queues: readonly string[];
      log: (line: string) => void;
    },
  ) {}

  /**
   * Notes the partitions whose master changed since the last sweep, and re-checks their parks
   * (see the class). A sweep that fails (the cluster still failing over) leaves them for the next.
   * @returns how many wakes it made due.
   */
  async sweep(signal: AbortSignal): Promise<number> {
    if (!(this.redis instanceof Cluster)) return 0;
    // Asked of a node that is down (the failing master): the next sweep asks again.
    const masters = await this.mastersNow(this.redis).catch(() => undefined);
    if (!masters) return 0;
    const before = this.masters;
    this.masters = masters.map((master, i) => master ?? before?.[i]);
    if (before) {
      masters.forEach((master, i) => {
        if (master !== undefined && before[i] !== undefined && master !== before[i]) this.pending.add(i);
      });
    }
    if (this.pending.size === 0) return 0;
    const changed = new Set(this.pending);
    const woken = await this.recheck(changed, signal);
    if (signal.aborted) return woken;
    for (const partition of changed) this.pending.delete(partition);
    this.options.log(
      `partition(s) ${[...changed].join(', ')} moved to another master (a failover): made due ${woken} wake(s) of runs parked there or on their mailboxes`,
    );
    return woken;
  }

  /** The master serving each partition's hash slot now, by node id (else address). */
  private async mastersNow(cluster: Cluster): Promise<(string | undefined)[]> {
    // Each range: first and last slot, then the master `[ip, port, id]`, then its replicas.
    const ranges = await cluster.cluster('SLOTS');
    return this.partitions.all.map((keys) => {
      const slot = keySlot(keys.prefix);
      const master = ranges.find(([first, last]) => first <= slot && slot <= last)?.[2];
      if (!master) return undefined;
      const [host, port, id] = master;
      return id || `${host}:${port}`;
    });
  }

  /** Makes due the delayed wakes of runs in `changed`, or parked on a mailbox there. */
  private async recheck(changed: ReadonlySet<number>, signal: AbortSignal): Promise<number> {
    const wakes: string[] = [];
    for (const partition of this.options.served) {
      for (const name of this.options.queues) {
        const queue = this.scheduler.queueOf(name, partition);
        for (let start = 0; !signal.aborted; start += PAGE) {
          const jobs = await queue.getDelayed(start, start + PAGE - 1);
          for (const job of jobs) {
            const data = job?.data as { runId?: string; park?: number } | undefined;
            if (!job?.id || data?.runId === undefined || data.park === undefined) continue; // not a wake
            if (changed.has(partition) || (await this.mailboxPartitions(data.runId)).some((p) => changed.has(p)))
              wakes.push(job.id);
          }
          if (jobs.length < PAGE) break;
        }
      }
    }
    await this.scheduler.promote(wakes);
    return wakes.length;
  }

  /** The partitions of the mailboxes run `runId` is parked on (several for a receiveAny); none when it is not parked. */
  private async mailboxPartitions(runId: string): Promise<number[]> {
    const replay = await this.redis.hget(this.partitions.of(runId).run(runId), 'replay');
    const parked = replay ? decodeReplay(replay).parked : undefined;
    if (!parked) return [];
    return (parked.addresses ?? [parked.address]).map((address) => this.partitions.indexOfAddress(address));
  }
}
