import type { ParkRequest } from '../interpreter/step-types.js';

/**
 * A run's event log: the rare transitions of its life that its record and step history do not
 * keep once they are over (committed steps are in the step history, failed tries in the error
 * history). Each entry is written by the store in the same atomic transition as what it records
 * (on Redis, in the same Lua script), so the log never says what did not happen and never misses
 * what did. Steps that commit write none: the hot path does not pay for it.
 */

/**
 * One entry of a run's event log (`Engine.runEvents`), oldest first. `at` is epoch ms on the
 * store's clock (RedisEngine: the Redis server's); `step` is the run's step counter then (the
 * step the event belongs to: 0 for the first step).
 *
 * - `forked`: the run was made by `Engine.fork` from committed step `from.step` of run `from.runId`.
 * - `parked`: its step waits on the mailboxes at `addresses` (one for a `receive`, several for a
 *   `receiveAny`) until `deadline` (epoch ms; `null`: no timeout); `room`: a send waits for room in
 *   the full inbox at `addresses[0]` (`onFull: 'park'`). A park's re-check that finds nothing and
 *   parks again on the same receive writes no new entry.
 * - `woken`: its step went on after its last park: by message `messageId` that came to `address`,
 *   or with nothing (`timedOut`: the receive's deadline passed). On a Redis Cluster, a message held
 *   in another partition names its `address` alone.
 * - `retried`: try `attempt` (0-based) of the step failed and the next is due at `retryAt` (epoch
 *   ms); the error is in the run's `errors`.
 * - `throttled`: its step waits for budget `key` (flow control), holding no worker and using no try.
 * - `released`: budget `key` admitted the throttled step: it runs again.
 * - `taken-over`: worker `by` took over the step that worker `from` held: `from` stopped
 *   heartbeating (its steps were handed back at once), or the lock of its step's job expired (it
 *   died, or its main loop stayed blocked past the lock) and BullMQ's stalled-job check gave the
 *   job back. Logged once per takeover, by the load of the step's task by `by`, at the step the run
 *   stands at then (a worker runs a run's steps on in one task: past the task's own). RedisEngine
 *   only: the LocalEngine has no workers, and its steps live and die with its process.
 * - `cancelled`: the run was cancelled, `by` whom when known (`Engine.cancel`'s `by`: say
 *   `'studio'`, `'cli'`; `'parent'`: its fan-out parent ended; `'conversation-budget'`: its
 *   conversation's budget ran out; `'agent-deleted'`).
 * - `operator-retry`: `Engine.retry` let the `failed` or `cancelled` run (`status`) go on.
 */
export type RunEvent = { at: number; step: number } & (
  | { kind: 'forked'; from: { runId: string; step: number } }
  | { kind: 'parked'; addresses: string[]; deadline: number | null; room?: true }
  | { kind: 'woken'; address?: string; messageId?: string; timedOut?: true }
  | { kind: 'retried'; attempt: number; retryAt: number }
  | { kind: 'throttled'; key: string }
  | { kind: 'released'; key: string }
  | { kind: 'taken-over'; from: string; by: string }
  | { kind: 'cancelled'; by?: string }
  | { kind: 'operator-retry'; status: 'failed' | 'cancelled' }
);

/** Entries a run's event log keeps, oldest dropped first (as run-lifecycle.lua's `MAX_RUN_EVENTS`). */
export const MAX_RUN_EVENTS = 200;

/** An entry as a store keeps it (JSON text). */
export function encodeRunEvent(event: RunEvent): string {
  return JSON.stringify(event);
}

/** An entry a store kept; one that is no JSON object is left out by the caller. */
export function decodeRunEvent(text: string): RunEvent | undefined {
  try {
    const event = JSON.parse(text) as RunEvent;
    return typeof event === 'object' && event !== null && typeof event.kind === 'string' ? event : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `next` parks on the same call as `parked` did (a re-check that found nothing: no new park). */
export function sameParkAs(parked: ParkRequest | undefined, next: ParkRequest | undefined): boolean {
  return parked !== undefined && next !== undefined && parked.ordinal === next.ordinal && !parked.room === !next.room;
}

/** The `parked` entry of a park on `park` at step `step`, at `now` (epoch ms). */
export function parkedEvent(step: number, park: ParkRequest, now: number): RunEvent {
  return {
    at: now,
    step,
    kind: 'parked',
    addresses: park.room || !park.addresses?.length ? [park.address] : [...park.addresses],
    deadline: park.deadline,
    ...(park.room ? { room: true as const } : {}),
  };
}
