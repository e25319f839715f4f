import type { WorkerBeat } from '@queueflow/runtime/kernel';

/** Milliseconds on a monotonic clock shared by every thread of the process (never paused, never set back). */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

/**
 * What the main thread and the heartbeat thread share, in a SharedArrayBuffer: the main loop's
 * last tick and the steps it runs (written by the main thread), and when the last beat was
 * recorded (written by the heartbeat thread), each in ms of {@link monotonicMs}.
 */
export class HeartbeatState {
  private readonly slots: BigInt64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(3 * 8)) {
    this.slots = new BigInt64Array(buffer);
  }

  get loopTickAt(): number {
    return Number(Atomics.load(this.slots, 0));
  }
  set loopTickAt(ms: number) {
    Atomics.store(this.slots, 0, BigInt(ms));
  }
  get active(): number {
    return Number(Atomics.load(this.slots, 1));
  }
  set active(steps: number) {
    Atomics.store(this.slots, 1, BigInt(steps));
  }
  get beatAt(): number {
    return Number(Atomics.load(this.slots, 2));
  }
  set beatAt(ms: number) {
    Atomics.store(this.slots, 2, BigInt(ms));
  }
}

/** Messages from the main thread to the heartbeat thread. */
export type ToHeartbeat =
  | { type: 'rejoin'; worker: Omit<WorkerBeat, 'active'> }
  /** The concurrency leases the worker holds now, as JSON (`meta.leases` of its beats). */
  | { type: 'leases'; leases: string }
  /** Job `id` started (`running`) or ended: its beats name the jobs running (`meta.jobs`). */
  | { type: 'job'; id: string; running: boolean }
  | { type: 'stop' };

/** Messages from the heartbeat thread to the main thread. */
export type FromHeartbeat =
  /** Its connection is up (or failed, `error` said why): the worker's connections are all open. */
  | { type: 'ready' }
  | { type: 'fenced'; id: string }
  | { type: 'stuck'; lagMs: number }
  | { type: 'error'; message: string }
  | { type: 'stopped' };
