export { BaseNode } from './core/base-node.js';
export { Node, type NodeOptions } from './core/node.js';
export { BatchNode } from './core/batch-node.js';
export { ParallelBatchNode, type ParallelOptions, type ItemOutcome } from './core/parallel-batch-node.js';
export { Flow, type FlowOptions, type FlowRunOptions } from './core/flow.js';
export type { RunContext } from './core/run-context.js';
export { BatchFlow } from './core/batch-flow.js';
export { ParallelBatchFlow } from './core/parallel-batch-flow.js';
export {
  AsyncNode,
  AsyncBatchNode,
  AsyncParallelBatchNode,
  AsyncFlow,
  AsyncBatchFlow,
  AsyncParallelBatchFlow,
} from './core/async-classes.js';
export type { Action, MaybePromise, NonIterableObject, ParamsObject } from './core/types.js';
export { DEFAULT_ACTION } from './core/types.js';
export { DEFAULT_QUEUE } from './core/queue-name.js';
export { MAX_PRIORITY } from './kernel/run-priority.js';
export type { BackoffOptions } from './core/backoff.js';
export type { Limit } from './core/limit.js';
export { backoffDelayMs } from './core/backoff.js';
export { setWarningHandler, type WarningCode, type WarningHandler } from './core/warnings.js';
export {
  QueueflowError,
  NonRetryableError,
  NodeTimeoutError,
  RateLimitedError,
  MIN_RATE_LIMITED_WAIT_MS,
  type QueueflowErrorCode,
} from './errors/queueflow-error.js';
export {
  toErrorRecord,
  fromErrorRecord,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_ERROR_STACK_CHARS,
  type ErrorRecord,
} from './errors/error-record.js';
export { defineFlow, type FlowDefinition, type FlowsOption } from './interpreter/flow-definition.js';
export { defineAgent, type AgentDefinition, type AgentOptions } from './agent/define-agent.js';
export type { ReminderOptions, ReminderInfo } from './agent/reminders.js';
export type {
  AgentInfo,
  AgentListing,
  AgentPage,
  AgentTurnInfo,
  AskOptions,
  ListAgentsOptions,
  PublishResult,
  PublishOptions,
  ConversationInfo,
  ConversationFork,
  ConversationOptions,
  EngineSendOptions,
  ForkConversationOptions,
} from './agent/agent-types.js';
export type { ConversationBudget, ConversationMessage } from './agent/conversation-store.js';
export type { SharedMemory, MemoryInfo, MemoryChange, MemoryPatch, StoredMemory } from './agent/shared-memory.js';
export type {
  Engine,
  RunStatus,
  FinalRunStatus,
  RunOptions,
  RunError,
  RunResult,
  RunHandle,
  ResultOptions,
  RunInfo,
  RunSummary,
  ListRunsOptions,
  StepRecord,
  RunEvent,
  CancelOptions,
  ForkOptions,
  WorkerInfo,
  BudgetInfo,
  QueueInfo,
  MailboxesOptions,
  MailboxInfo,
  ParkedRun,
  RunChange,
  WatchOptions,
  ChildSummary,
  FlowGraph,
  StreamEntry,
  StreamOptions,
  StreamRestart,
  ScheduleOptions,
  ScheduleRunOptions,
  ScheduleInfo,
} from './kernel/engine.js';
export { LocalEngine, type LocalEngineOptions } from './local/local-engine.js';
export { toMermaid, type MermaidOptions } from './interpreter/mermaid.js';
export type { Clock } from './kernel/clock.js';
export { assertJson, type Json, type JsonObject } from './json/json.js';
export type { MergeConflict } from './json/merge-patches.js';
export type { Message, Mailbox, SendOptions, ReceiveOptions, Received } from './mailbox/message.js';
export { MAX_MESSAGE_BYTES } from './mailbox/message.js';
export { MAX_STREAM_ENTRY_BYTES } from './stream/stream-entry.js';
export { InMemoryMailboxes, processMailboxes } from './mailbox/in-memory-mailboxes.js';
