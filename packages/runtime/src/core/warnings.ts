/**
 * Stable codes of the warnings queueflow emits.
 *
 * - `QF_SUCCESSOR_OVERWRITTEN`: `next`/`on` replaced an existing successor (rule S4).
 * - `QF_FLOW_ENDS`: a node returned an action with no successor while it has others (rule S5).
 * - `QF_NODE_WONT_RUN_SUCCESSORS`: `node.run` on a node that has successors (rule S11).
 * - `QF_REDIS_CONFIG`: the Redis server is configured in a way that can lose jobs, or a worker
 *   could not read its configuration (a Redis user that may not run INFO).
 * - `QF_STEP_REFUSED`: a worker gave a step back because its code does not match the run's
 *   (another graph fingerprint, or a flow it does not have); once per run and worker.
 * - `QF_NO_WORKER`: a client has waited 10 s for a run whose flow, or the queue of whose next
 *   step, no live worker serves; once per flow and client.
 * - `QF_SCHEDULE_TICK_FAILED`: a schedule's tick could not start its run (LocalEngine; on Redis
 *   the worker's `onError` hears of it and BullMQ retries the tick).
 * - `QF_REMINDERS_FAILED`: agents' due reminders could not be fired (LocalEngine; a worker's
 *   `onError` hears of it on Redis); they are tried again.
 * - `QF_CLOCK_SKEW`: this machine's clock is more than a second off the Redis server's; once.
 * - `QF_LIMITS_IGNORED`: `flow.run` visits a node with `limits`, which only the engines enforce
 *   (LocalEngine, RedisEngine); once per node name.
 */
export type WarningCode =
  | 'QF_SUCCESSOR_OVERWRITTEN'
  | 'QF_FLOW_ENDS'
  | 'QF_AGENT_TURN_END_FAILED'
  | 'QF_NODE_WONT_RUN_SUCCESSORS'
  | 'QF_REDIS_CONFIG'
  | 'QF_STEP_REFUSED'
  | 'QF_NO_WORKER'
  | 'QF_CLOCK_SKEW'
  | 'QF_SCHEDULE_TICK_FAILED'
  | 'QF_REMINDERS_FAILED'
  | 'QF_LIMITS_IGNORED';

/** Receives every warning queueflow emits. */
export type WarningHandler = (code: WarningCode, message: string) => void;

const emitProcessWarning: WarningHandler = (code, message) => {
  process.emitWarning(message, { type: 'QueueflowWarning', code });
};

let handler: WarningHandler = emitProcessWarning;

/**
 * Replaces the warning channel. The default calls
 * `process.emitWarning(message, { type: 'QueueflowWarning', code })`; pass `null` to restore it.
 *
 * @example
 * ```ts
 * setWarningHandler(() => {});                                  // silence
 * setWarningHandler((code, msg) => { throw new Error(msg); });  // make warnings fatal
 * ```
 */
export function setWarningHandler(next: WarningHandler | null): void {
  handler = next ?? emitProcessWarning;
}

/** Emits a warning through the current channel. */
export function warn(code: WarningCode, message: string): void {
  handler(code, message);
}
