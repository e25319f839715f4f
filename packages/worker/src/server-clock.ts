import type { RedisConnection } from './connection.js';
import { warn } from '@queueflow/runtime/kernel';
import type { Clock } from '@queueflow/runtime';

/** A clock offset from the Redis server's by more than this, in ms, is warned about. */
const SKEW_WARNING_MS = 1000;
/** Measures of the offset per sync. */
const SAMPLES = 3;

/**
 * A `TIME` whose round trip took longer than this, in ms, says nothing about the offset (the
 * server was restarting or stalled, or the reply waited behind a reconnect): it is not used.
 */
const MAX_SAMPLE_RTT_MS = 500;

/**
 * The Redis server's clock, as seen from this process: this machine's clock plus the offset to
 * the server's `TIME`, measured at `sync` (half the round trip assumed each way). Every deadline
 * and timestamp queueflow computes on a client or worker comes from it, so that a machine whose
 * clock is off neither shortens nor skips a wait another machine computed (a receive timeout,
 * a park's wake, a record's times). Delays stay relative (`setTimeout`).
 *
 * BullMQ's own delayed jobs (retry waits, wakes) are scored and promoted on each machine's clock:
 * a try or wake promoted early is put back until its time on the server's clock (`retryAt`, the
 * park's deadline), but one can still run late by the skew. Keep the machines' clocks in sync
 * (NTP); a worker warns `QF_CLOCK_SKEW` when its clock is more than a second off the server's.
 */
export class ServerClock implements Clock {
  private offsetMs = 0;
  private warned = false;

  constructor(
    private readonly redis: RedisConnection,
    /** This machine's clock (tests inject a skewed one). */
    private readonly local: Clock,
  ) {}

  /**
   * Measures the offset to the server's clock again; returns it, in ms. Of a few measures, the
   * one with the shortest round trip is kept: the first command may wait for a connection to be
   * made (on a cluster, each node's is made on first use), which would skew the measure by as
   * much.
   */
  async sync(): Promise<number> {
    let best: { roundTripMs: number; offsetMs: number } | undefined;
    for (let i = 0; i < SAMPLES; i++) {
      const before = this.local.now();
      const [seconds, micros] = await this.redis.time();
      const after = this.local.now();
      const server = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      const measure = { roundTripMs: after - before, offsetMs: Math.round(server - (before + after) / 2) };
      if (!best || measure.roundTripMs < best.roundTripMs) best = measure;
    }
    // A sample whose round trip was slow (a server restarting, a reconnect) says nothing of the offset.
    if (best!.roundTripMs > MAX_SAMPLE_RTT_MS) return this.offsetMs;
    this.offsetMs = best!.offsetMs;
    if (Math.abs(this.offsetMs) > SKEW_WARNING_MS && !this.warned) {
      this.warned = true;
      warn(
        'QF_CLOCK_SKEW',
        `this machine's clock is ${(this.offsetMs / 1000).toFixed(1)} s off the Redis server's: queueflow's deadlines and retry waits use the server's time, but BullMQ's delayed jobs may run late by as much: sync the clocks (NTP)`,
      );
    }
    return this.offsetMs;
  }

  now(): number {
    return this.local.now() + this.offsetMs;
  }

  setTimeout(callback: () => void, delayMs: number): unknown {
    return this.local.setTimeout(callback, delayMs);
  }

  clearTimeout(handle: unknown): void {
    this.local.clearTimeout(handle);
  }
}
