/**
 * The studio API's answers, as JSON (see packages/worker/src/studio). Times are epoch ms.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export type RunStatus = 'queued' | 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled';
export const RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'];
export const FINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

interface RunError {
  message: string;
  name?: string;
  code?: string;
  node?: string;
  attempts?: number;
}

export interface ErrorRecord {
  name: string;
  message: string;
  code?: string;
  stack?: string;
  retryable: boolean;
  node?: string;
  attempt?: number;
  at?: number;
}

interface MergeConflict {
  path: string;
  children: number[];
}

interface RunSummary {
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

export interface RunInfo extends RunSummary {
  errors: ErrorRecord[];
  conflicts: MergeConflict[];
  children?: { total: number; ended: number; failed: number };
  shared: JsonObject;
}

export interface PatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test' | '_get';
  path: string;
  value?: Json;
  from?: string;
}

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

interface ChildSummary {
  index: number;
  runId?: string;
  status: RunStatus;
  startedAt?: number;
  finishedAt?: number;
  error?: RunError;
}

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

export interface Message {
  id: string;
  body: Json;
  replyTo?: string;
  sentAt: number;
}

export interface ParkedRun {
  runId: string;
  flow: string;
  node?: string;
  since: number;
  deadline: number | null;
}

export interface MailboxInfo {
  address: string;
  size: number;
  messages: Message[];
  parked: ParkedRun[];
}

export interface FlowGraph {
  flow: string;
  root: string;
  nodes: { id: string; kind: string; start?: string; successors: Record<string, string> }[];
  mermaid: string;
  mermaidIds: Record<string, string>;
}

export interface RunChange {
  runId: string;
  status: RunStatus;
  steps: number;
}

type StatusCounts = Record<RunStatus, number>;

export interface CountsBody {
  counts: StatusCounts;
  flows: Record<string, StatusCounts>;
  total: number;
  capped: boolean;
  at: number;
}

export interface RunsPage {
  runs: RunSummary[];
  offset: number;
  limit: number;
  hasMore: boolean;
  total?: number;
}

export interface ChildrenPage {
  children: ChildSummary[];
  offset: number;
  limit: number;
  hasMore: boolean;
}

export interface StepDiff {
  step: number;
  before: Json;
  after: Json;
}
