/**
 * `@queueflow/runtime/interpreter`: the pieces an engine is built from (the step interpreter,
 * checkpoints, graph compilation, fan-out merge). Applications use `LocalEngine` or
 * `RedisEngine` instead; this entry point is for engine implementations.
 */
export type { Checkpoint, Frame, FrameKind, Visit } from './engine/checkpoint.js';
export { initialCheckpoint, targetOf, enterPlainFlows, walkParams } from './engine/walk.js';
export { executeStep, type StepContext, type StepOutcome, type StepTarget } from './engine/step-interpreter.js';
export {
  executeItem,
  resumeFanOut,
  walkCheckpoint,
  type ChildOutcome,
  type FanOutRequest,
  type ItemStepOutcome,
} from './engine/fan-out.js';
export { compileGraph, type CompiledGraph, type GraphNode, type NodeKind } from './engine/graph.js';
export { FlowRegistry, isFlowDefinition } from './engine/flow-definition.js';
export { diffShared, mergePatches, type PatchOperation } from './engine/merge-patches.js';
export { checkRunInput, encodeCheckpoint, runErrorOf } from './engine/run-input.js';
export { jsonCopy } from './engine/json.js';
export { newRunId } from './engine/run-id.js';
export { systemClock } from './engine/clock.js';
export type { NodeRuntime } from './engine/node-runtime.js';
export { warn } from './core/warnings.js';
export { invalidOption } from './core/validate-options.js';
export {
  StepMailbox,
  ParkSignal,
  type MessageReservations,
  type OutgoingMessage,
  type ParkRequest,
  type StepReplay,
} from './engine/step-mailbox.js';
export { checkAddress, checkMessageBody } from './mailbox/message.js';
export { recordOfRunError } from './errors/error-record.js';
