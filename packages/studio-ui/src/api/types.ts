/**
 * The studio API's answers, as JSON (see packages/worker/src/studio). Times are epoch ms.
 */
import type {
  AgentInfo,
  AgentPage,
  AgentTurnInfo,
  BudgetInfo,
  ChildSummary,
  ConversationBudget,
  ConversationFork,
  ConversationInfo,
  ConversationMessage,
  QueueInfo,
  ErrorRecord,
  FlowGraph,
  Json,
  JsonObject,
  MailboxInfo,
  Message,
  ParkedRun,
  RunChange,
  RunEvent,
  RunInfo,
  RunStatus,
  RunSummary,
  StepRecord,
  WorkerInfo,
} from '@queueflow/runtime';
import type { PatchOperation } from '@queueflow/runtime/kernel';

// The engine's own types (type imports: nothing of the runtime ships in the page).
export type {
  AgentPage,
  AgentTurnInfo,
  BudgetInfo,
  ConversationFork,
  ConversationInfo,
  ConversationMessage,
  ErrorRecord,
  FlowGraph,
  Json,
  JsonObject,
  MailboxInfo,
  Message,
  ParkedRun,
  PatchOperation,
  RunChange,
  RunEvent,
  RunInfo,
  RunStatus,
  StepRecord,
  WorkerInfo,
};

export const RUN_STATUSES: readonly RunStatus[] = [
  'queued',
  'running',
  'waiting',
  'throttled',
  'completed',
  'failed',
  'cancelled',
];
export const FINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

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
  /** Every child by status, for a fan-out of up to 10,000 children (the server reads them whole). */
  counts?: Record<RunStatus, number>;
}

export interface StepDiff {
  step: number;
  before: Json;
  after: Json;
}

/** `GET /api/queues` (and the `queues` event): every queue and every budget key. */
export interface QueuesBody {
  queues: QueueInfo[];
  budgets: BudgetInfo[];
}

/** `GET /api/agent?ref=`: the agent, and its turns (oldest first) as `history`. */
export interface AgentBody extends AgentInfo {
  ref: string;
  history: AgentTurnInfo[];
}

/** One conversation in `GET /api/conversations`: its record without the messages and waits themselves. */
export interface ConversationSummary {
  id: string;
  status: ConversationInfo['status'];
  turns: number;
  participants: string[];
  /** Messages in its record (the last 1,000). */
  messages: number;
  /** Turns parked now. */
  waits: number;
  /** What its turns spent, per key, over all its agents. */
  spent: Record<string, number>;
  budget?: ConversationBudget;
  startedAt: number;
  updatedAt: number;
  error?: ConversationInfo['error'];
}

/** `GET /api/conversations`: one page, newest first; `cursor` reads the next. */
export interface ConversationsPage {
  conversations: ConversationSummary[];
  cursor?: string;
}

/**
 * `GET /api/conversation/turn?run=`: a turn's run and what it changed in its state (`shared`),
 * with the message it handled once its turn has ended.
 */
export interface ConversationTurn {
  runId: string;
  status: RunStatus;
  ref?: string;
  turn?: number;
  message?: Message;
  before: JsonObject;
  after: JsonObject;
  patch: PatchOperation[];
  steps: number;
}
