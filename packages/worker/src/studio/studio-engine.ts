/**
 * What the studio needs of an engine: the subset of `Engine` (`@queueflow/runtime`) it calls,
 * as a structural type, so that `RedisEngine` and `LocalEngine` both fit, and so does a fake in
 * the studio's unit tests.
 *
 * TEMPORARY: copied from the draft of the operating-runs methods (history, retry, fork, workers,
 * mailboxes, answer, watch, sharedAt, children, graph, list offset) while they are being
 * implemented in the kernel; once they land, this becomes `Pick<Engine, …>` over the real types.
 */
import type { ErrorRecord, Json, JsonObject, Message, MergeConflict, RunError, RunStatus } from '@queueflow/runtime';
import type { Operation } from 'fast-json-patch';

export type { RunStatus };
/** One RFC 6902 JSON Patch operation. */
export type PatchOperation = Operation;

/** What `list` shows of a run. Times are epoch milliseconds. */
export interface StudioRunSummary {
  id: string;
  flow: string;
  status: RunStatus;
  currentNode?: string;
  steps: number;
  attempts: number;
  createdAt: number;
  startedAt?: number;
  finishedAt?: number;
  updatedAt: number;
  lastAction?: string;
  error?: RunError;
  parentId?: string;
  refusal?: string;
  forkedFrom?: { runId: string; step: number };
  retries?: number;
}

/** What `get` shows of a run. */
export interface StudioRunInfo extends StudioRunSummary {
  errors: ErrorRecord[];
  conflicts: MergeConflict[];
  children?: { total: number; ended: number; failed: number };
  shared: JsonObject;
}

/** Filter of `list`. */
export interface StudioListOptions {
  status?: RunStatus;
  flow?: string;
  limit?: number;
  offset?: number;
}

/** One committed step of a run. Times are epoch milliseconds. */
export interface StepRecord {
  step: number;
  node: string;
  action?: string;
  tries: number;
  startedAt: number;
  endedAt: number;
  worker?: string;
  patch: PatchOperation[];
  merged?: { children: number; conflicts: MergeConflict[] };
}

export interface ForkOptions {
  step: number;
  patch?: PatchOperation[];
  params?: JsonObject;
}

/** A live worker. Times are epoch milliseconds. */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  concurrency: number;
  active: number;
  flows: string[];
  startedAt: number;
  lastSeenAt: number;
}

export interface MailboxesOptions {
  messages?: number;
}

/** A mailbox and who waits on it. */
export interface MailboxInfo {
  address: string;
  size: number;
  messages: Message[];
  parked: ParkedRun[];
}

/** A run waiting on a mailbox. Times are epoch milliseconds. */
export interface ParkedRun {
  runId: string;
  flow: string;
  node?: string;
  since: number;
  deadline: number | null;
}

/** One child of a fan-out. Times are epoch milliseconds. */
export interface ChildSummary {
  index: number;
  runId?: string;
  status: RunStatus;
  startedAt?: number;
  finishedAt?: number;
  error?: RunError;
}

/** A change to a run, for live views. */
export interface RunChange {
  runId: string;
  status: RunStatus;
  steps: number;
}

/** A flow's graph for drawing. */
export interface FlowGraph {
  flow: string;
  root: string;
  nodes: { id: string; kind: string; start?: string; successors: Record<string, string> }[];
  mermaid: string;
  mermaidIds: Record<string, string>;
}

/**
 * The engine methods the studio calls: `LocalEngine` and `RedisEngine` both have them.
 * The studio never closes the engine: whoever made it does.
 */
export interface StudioEngine {
  get(runId: string): Promise<StudioRunInfo | undefined>;
  list(options?: StudioListOptions): Promise<StudioRunSummary[]>;
  cancel(runId: string): Promise<void>;
  history(runId: string): Promise<StepRecord[]>;
  retry(runId: string): Promise<{ id: string }>;
  fork(runId: string, options: ForkOptions): Promise<{ id: string }>;
  workers(): Promise<WorkerInfo[]>;
  mailboxes(options?: MailboxesOptions): Promise<MailboxInfo[]>;
  answer(address: string, messageId: string, body: Json): Promise<void>;
  watch(listener: (event: RunChange) => void): Promise<() => void>;
  sharedAt(runId: string, step: number): Promise<JsonObject>;
  children(runId: string, options?: { offset?: number; limit?: number }): Promise<ChildSummary[]>;
  graph(flow: string): Promise<FlowGraph | undefined>;
}
