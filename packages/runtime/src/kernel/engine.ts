import type { ErrorRecord, RunError } from '../errors/error-record.js';

export type { RunError };
import type { FlowDefinition } from '../interpreter/flow-definition.js';
import type { Json, JsonObject } from '../json/json.js';
import type { MergeConflict } from '../json/merge-patches.js';

/**
 * A run's status. `queued`: created, no step taken; `running`: a step is queued or running;
 * `waiting`: parked on children (fan-out) or a mailbox, holding no worker; then one of the
 * final statuses `completed`, `failed`, `cancelled`.
 */
export type RunStatus = 'queued' | 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';
export type FinalRunStatus = 'completed' | 'failed' | 'cancelled';

/**
 * Options of a run. `shared` and params are typed as any object (interfaces included); the
 * engine checks at run time that they survive JSON.
 */
export interface RunOptions<P extends object = object> {
  /** The flow's params (rule S6). Must survive JSON. @defaultValue `{}` */
  params?: P;
}

/** How a run ended. `shared` is the last committed shared store. */
export interface RunResult<S extends object = JsonObject> {
  id: string;
  status: FinalRunStatus;
  shared: S;
  /** The root's final action (rule S7); absent for `undefined`. */
  lastAction?: string;
  error?: RunError;
}

export interface RunHandle<S extends object = JsonObject> {
  id: string;
  /** Resolves when the run has ended, also if it ended before the call. */
  result(): Promise<RunResult<S>>;
}

/** What `list` shows of a run: its record without `shared` and histories. Times are epoch milliseconds. */
export interface RunSummary {
  id: string;
  flow: string;
  status: RunStatus;
  /** Id of the node the next (or running) step visits. */
  currentNode?: string;
  /** Steps committed so far (the step counter). */
  steps: number;
  /** Failed tries of the current step so far (for a failed run: every try of the failed step); a count. */
  attempts: number;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  updatedAt: number;
  lastAction?: string;
  error?: RunError;
  /** The parent run, for a fan-out child. */
  parentId?: string;
  /**
   * Why a worker gave the current step back without running it, when one did (RedisEngine: a
   * worker with other code deployed, or without this flow); cleared when a step commits.
   */
  refusal?: string;
}

/** What an engine knows of a run (`get`). Times are epoch milliseconds. */
export interface RunInfo extends RunSummary {
  /** Errors of failed tries, oldest first (the last 50). */
  errors: ErrorRecord[];
  /** Paths that two fan-out children both wrote, resolved in param-set order. */
  conflicts: MergeConflict[];
  /** Fan-out progress while waiting on children. */
  children?: { total: number; ended: number; failed: number };
  /** The last committed shared store. */
  shared: JsonObject;
}

/** Filter of {@link Engine.list}. */
export interface ListRunsOptions {
  status?: RunStatus;
  flow?: string;
  /** Most runs returned, newest first. @defaultValue 100 */
  limit?: number;
}

/**
 * Runs registered flows. `LocalEngine` keeps runs in memory in this process; `RedisEngine`
 * (`@queueflow/worker`) keeps them in Redis and lets workers anywhere take the steps. Both give
 * the same final `shared` and last action for the same flow (DESIGN: one semantics, two engines).
 */
export interface Engine {
  /** Starts a run and waits for it to end. Never rejects for a failed run: see `status`. */
  run<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options?: RunOptions,
  ): Promise<RunResult<S>>;
  /**
   * Starts a run. @throws QueueflowError `NOT_JSON` (naming the path) when `shared` or params
   * would not survive JSON, `UNKNOWN_FLOW` for an unregistered flow; nothing is written then.
   */
  start<S extends object = JsonObject>(
    flow: FlowDefinition | string,
    shared: S,
    options?: RunOptions,
  ): Promise<RunHandle<S>>;
  /** The run's record, finished runs included (within the engine's retention). */
  get(runId: string): Promise<RunInfo | undefined>;
  /** Resolves when run `runId` has ended, also if it already has. @throws QueueflowError RUN_NOT_FOUND for an unknown run id. */
  result(runId: string): Promise<RunResult>;
  /**
   * Runs started with `run`/`start`, newest first (fan-out children are seen through their
   * parent), without `shared` and histories: `get` one for those.
   */
  list(options?: ListRunsOptions): Promise<RunSummary[]>;
  /**
   * Cancels the run now: its status becomes `cancelled`, and a step in flight commits nothing
   * (the run stops at that step boundary). No-op once ended.
   * @throws QueueflowError RUN_NOT_FOUND for an unknown run id.
   */
  cancel(runId: string): Promise<void>;
  /**
   * Sends a message to the mailbox at `address` from outside any run, e.g. a person answering an
   * agent; it wakes a run waiting on that address.
   * @throws QueueflowError NOT_JSON for a body that would not survive JSON; TypeError for a bad address.
   */
  send(address: string, body: Json): Promise<void>;
  /** Releases the engine's resources; runs of a `LocalEngine` stop where they are. */
  close(): Promise<void>;
}
