import type { ParkRequest } from '../interpreter/step-types.js';
import { decodeMessage } from '../kernel/codec.js';
import { encodeRunEvent, MAX_RUN_EVENTS, sameParkAs, type RunEvent } from '../kernel/run-event.js';
import type { StoredRun } from '../kernel/run-store.js';

/**
 * A run's event log in memory (kernel/run-event.ts), kept on its entry in the memory store and
 * written by the same synchronous transitions as Redis writes it in its Lua scripts
 * (run-lifecycle.lua, `logEvent` and `logWoken`): the same entries on both engines.
 */
export interface MemoryRunLog {
  /** Encoded entries, oldest first, capped at MAX_RUN_EVENTS. */
  events?: string[];
  /** The park count whose wake was logged (`woken` once per park). */
  woke?: number;
}

/** Appends `event` to the log, dropping the oldest past the cap. */
export function logRunEvent(log: MemoryRunLog, event: RunEvent): void {
  const events = (log.events ??= []);
  events.push(encodeRunEvent(event));
  if (events.length > MAX_RUN_EVENTS) events.splice(0, events.length - MAX_RUN_EVENTS);
}

/**
 * The run's step goes on after its last park (it commits, fans out, fails, or parks on a later
 * call, `next`): logs `woken`, once per park, with the message reserved for the parked receive
 * (none: it timed out). Nothing when the step did not park, or parks again on the same call.
 */
export function logWoken(
  log: MemoryRunLog,
  run: StoredRun,
  reserved: ReadonlyMap<number, { address: string; message: string }>,
  now: number,
  next?: ParkRequest,
): void {
  const parked = run.replay.parked;
  if (!parked || log.woke === run.parkCount || sameParkAs(parked, next)) return;
  log.woke = run.parkCount;
  const held = parked.room ? undefined : reserved.get(parked.ordinal);
  const by = held
    ? { address: held.address, messageId: decodeMessage(held.message).id }
    : parked.room
      ? { address: parked.address }
      : { timedOut: true as const };
  logRunEvent(log, { at: now, step: run.step, kind: 'woken', ...by });
}
