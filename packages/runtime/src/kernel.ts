/**
 * `@queueflow/runtime/kernel`: what an engine is built from (DESIGN "The run kernel"): the storage
 * and scheduling contracts, the step driver and run client that run every run over them, the
 * codec, and the step interpreter underneath. Applications use `LocalEngine` or `RedisEngine`;
 * this entry point is for engine implementations (such as `@queueflow/worker`).
 */
export type {
  RunStore,
  Runnable,
  NewRun,
  StoredRun,
  LoadedRun,
  StalledTask,
  ChildOf,
  RunRecord,
  CommitMode,
  CommitFields,
  CommitResult,
  CommitReply,
  TurnEndCommit,
  ChildReport,
  ChildEndReport,
  ChildEndedResult,
  ChildRange,
  CancelResult,
  FanOutCommit,
  ParkReply,
  StoredFanOut,
} from './kernel/run-store.js';
export type { ReopenReply, StoredMailbox, WorkerBeat, StoredWorker } from './kernel/run-store.js';
export type { StreamWrite, StreamAppendReply, StoredStreamEntry } from './kernel/run-store.js';
export type {
  BudgetLimit,
  BudgetRequest,
  BudgetReply,
  BudgetHold,
  BudgetKeyInfo,
  BudgetState,
} from './kernel/budget-store.js';
export { BudgetGate, BudgetLeases, BUDGET_RECHECK_MS, type BudgetGateOptions } from './kernel/budget-gate.js';
export {
  childRunId,
  childOutcomeOf,
  wakeId,
  isFinal,
  newRunRecord,
  MAX_ERRORS_KEPT,
  DEFAULT_MAX_STREAM_ENTRIES,
} from './kernel/run-store.js';
export type {
  QueueCounts,
  Scheduler,
  Task,
  StepTask,
  WakeTask,
  ItemTask,
  TaskResult,
  TaskOptions,
  StepTaskOptions,
} from './kernel/scheduler.js';
export { taskId, taskOptionsOf } from './kernel/scheduler.js';
export { wakeTaskOf } from './kernel/step-chain.js';
export { queueOf } from './kernel/run-info.js';
export { encodeRunEvent, decodeRunEvent, parkedEvent, sameParkAs, MAX_RUN_EVENTS } from './kernel/run-event.js';
export { checkPriority } from './kernel/run-priority.js';
export { checkQueueName } from './core/queue-name.js';
export { startRun } from './kernel/start-run.js';
export {
  checkSchedule,
  checkScheduleName,
  scheduleInfoOf,
  type ScheduleDefinition,
} from './kernel/schedule-definition.js';
export { runScheduleTick, type ScheduleRunLog, type TickHost, type TickOutcome } from './kernel/schedule-tick.js';
export type { RunEventListener, RunEventSource } from './kernel/run-events.js';
export { StepDriver, type StepDriverOptions, type TaskDelivery } from './kernel/step-driver.js';
export { RunClient, prepareRun, type RunClientOptions } from './kernel/run-client.js';
export { ResultWaiter } from './kernel/result-waiter.js';
export { cancelRun, resumeCascades } from './kernel/cancel-run.js';
export {
  encodeCheckpoint,
  encodeChildStart,
  decodeCheckpoint,
  encodeShared,
  decodeShared,
  encodeTarget,
  decodeTarget,
  encodeReplay,
  decodeReplay,
  encodeOutcome,
  decodeOutcome,
  encodeRequest,
  decodeRequest,
  encodeMessage,
  decodeMessage,
  encodeErrorRecord,
  decodeErrorRecord,
  encodeRunError,
  decodeRunError,
  encodeConflict,
  decodeConflict,
  encodeJson,
  decodeJson,
  encodeStepRecord,
  decodeStepRecord,
  type StoredCheckpoint,
  type StoredStepRecord,
} from './kernel/codec.js';
export { systemClock } from './kernel/clock.js';
export {
  ClaimCheck,
  DEFAULT_LARGE_VALUE_BYTES,
  checkLargeValueBytes,
  hasRefs,
  refsIn,
  type ValueClaim,
} from './kernel/claim-check.js';
export { LargeValues } from './kernel/large-values.js';
export { compareStreamIds } from './stream/stream-entry.js';
export { observeGauges, queueflowMetrics, type GaugeSource, type QueueflowMetrics } from './telemetry/metrics.js';
export { inboxDepths, type InboxDepth } from './agent/inbox-depth.js';
export { setStepListener, type StepEvent } from './telemetry/step-listener.js';
export { checkRunId, newRunId } from './kernel/run-id.js';
export { checkRunInput } from './kernel/run-input.js';
export { MemoryRunStore } from './local/memory-run-store.js';
export { MemoryAgentStore, type InboxPort, type ValuePort } from './local/memory-agent-store.js';
export { LocalScheduler, type TaskRunner } from './local/local-scheduler.js';
export type { Checkpoint, Frame, FrameKind, Visit } from './interpreter/checkpoint.js';
export type {
  StepTarget,
  StepContext,
  StepOutcome,
  FanOutRequest,
  ChildOutcome,
  OutgoingMessage,
  ParkRequest,
  StepReplay,
  StepBudgetPort,
} from './interpreter/step-types.js';
export { initialCheckpoint } from './interpreter/walk.js';
export { executeStep } from './interpreter/step-interpreter.js';
export { compileGraph, type CompiledGraph, type GraphNode, type NodeKind } from './interpreter/graph.js';
export { FlowRegistry, isFlowDefinition } from './interpreter/flow-definition.js';
export { diffShared, mergePatches, type PatchOperation } from './json/merge-patches.js';
export { jsonCopy } from './json/json.js';
export { warn } from './core/warnings.js';
export { invalidOption } from './core/validate-options.js';
export { checkAddress, checkMessageBody } from './mailbox/message.js';
export { checkTopic } from './mailbox/topic.js';
export {
  reminderInfo,
  ONE_SHOT_GRACE_MS,
  type ReminderChange,
  type StoredReminder,
  type ReminderInfo,
} from './agent/reminders.js';
export { ReminderTimer } from './agent/reminder-timer.js';
export {
  MAX_CONVERSATION_MESSAGES,
  type ConversationReceipt,
  type ConversationStore,
  type ConversationTurn,
  type StoredConversation,
} from './agent/conversation-store.js';
export {
  MAX_MEMORY_HISTORY,
  memoryInfo,
  type MemoryWrite,
  type MemoryWriteReply,
  type SharedMemoryStore,
  type StoredMemory,
} from './agent/shared-memory.js';
export { checkWellFormed } from './core/well-formed.js';
export type { Message } from './mailbox/message.js';
export {
  parseAgentRef,
  checkAgentRef,
  isAgentDefinition,
  AGENT_REF_PREFIX,
  AGENT_FLOW_PREFIX,
  type AgentDefinition,
} from './agent/define-agent.js';
export {
  MAX_DEAD_LETTERS,
  turnRunId,
  type AgentStore,
  type AgentActivation,
  type AgentTurn,
  type DeadLetter,
  type FirstState,
  type StoredAgent,
  type TurnEnd,
  type NextTurnRun,
  type TurnRunTemplate,
  type TurnStart,
  type TurnStarted,
} from './agent/agent-store.js';
export { AgentRuntime, type AgentRuntimeOptions } from './agent/agent-runtime.js';
export { AGENT_SEND_WINDOW, AgentClient, type AgentClientHost } from './agent/agent-client.js';
export { agentsOf, withTurnFlows } from './agent/agent-registry.js';
export type { TurnHooks } from './kernel/step-driver.js';
export type { InboxBound } from './mailbox/step-mailbox.js';
