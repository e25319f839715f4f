/**
 * The one codec of the run kernel (langgraphjs `serde`, Temporal `DataConverter`): every form in
 * which run state is stored, with its type, and the only place that turns it into text and back.
 * Stores keep the strings; they never look inside them.
 */
import jsonPatch from 'fast-json-patch';
import { corruptRunError, type ErrorRecord } from '../errors/error-record.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Checkpoint, Frame } from '../interpreter/checkpoint.js';
import type { Json, JsonObject } from '../json/json.js';
import { diffShared, type MergeConflict, type PatchOperation } from '../json/merge-patches.js';
import type { ChildOutcome, FanOutRequest, StepReplay, StepTarget } from '../interpreter/step-types.js';
import type { Message } from '../mailbox/message.js';
import type { RunError } from './engine.js';
import type { ClaimCheck } from './claim-check.js';

/**
 * A checkpoint as stored: whole, or, for a fan-out child, as the JSON Patch (diffShared's
 * mergeable form) that turns its parent's snapshot into its `shared`, so that N children of a
 * large `shared` do not store N copies of it.
 */
export type StoredCheckpoint =
  | { shared: JsonObject; frames: Frame[]; lastAction?: string }
  | { base: 'snapshot'; patch: PatchOperation[]; frames: Frame[]; lastAction?: string };

/**
 * Encodes a checkpoint, refusing one over `maxBytes` (its whole size, values stored apart
 * included). With `snapshot` (a fan-out child), stores `shared` as its delta against it. With
 * `claim`, the large values of `shared` (of the delta's values, for a child) are set apart (see
 * claim-check.ts) and the claim collects them.
 *
 * @throws QueueflowError `PAYLOAD_TOO_LARGE` naming the size and the limit.
 */
export function encodeCheckpoint(
  checkpoint: Checkpoint,
  maxBytes: number,
  snapshot?: JsonObject,
  claim?: ClaimCheck,
): string {
  const stored: StoredCheckpoint = snapshot
    ? { base: 'snapshot', patch: diffShared(snapshot, checkpoint.shared), frames: checkpoint.frames }
    : { shared: checkpoint.shared, frames: checkpoint.frames };
  if (checkpoint.lastAction !== undefined) stored.lastAction = checkpoint.lastAction;
  const encoded = limited(JSON.stringify(stored), maxBytes, "the run's checkpoint (shared, params and step state)");
  if (!claim?.mayHold(encoded)) return encoded; // the hot path: no value can be over the size
  if ('base' in stored) stored.patch = externalizePatch(stored.patch, claim);
  else stored.shared = claim.externalizeShared(stored.shared, encoded);
  stored.frames = externalizeFrames(stored.frames, claim);
  return JSON.stringify(stored);
}

/**
 * `frames` with their large values set apart: a flow's or a node's `prep` result (a fan-out of a
 * million items holds the list there until its fan-in) and a BatchNode's results so far.
 */
function externalizeFrames(frames: Frame[], claim: ClaimCheck): Frame[] {
  return frames.map((frame) => {
    const { visit } = frame;
    const out: Frame = { ...frame };
    if (frame.prepRes !== undefined) out.prepRes = claim.externalize(frame.prepRes);
    if (visit) {
      out.visit = { ...visit };
      if (visit.prepRes !== undefined) out.visit.prepRes = claim.externalize(visit.prepRes);
      if (visit.results !== undefined) out.visit.results = claim.externalize(visit.results);
    }
    return out;
  });
}

/** `patch` with the large values of its operations set apart. */
export function externalizePatch(patch: PatchOperation[], claim: ClaimCheck): PatchOperation[] {
  return patch.map((operation) =>
    'value' in operation
      ? ({ ...operation, value: claim.externalize(operation.value as Json) } as PatchOperation)
      : operation,
  );
}

/** The first checkpoint of a fan-out child: its frames, and `shared` equal to the snapshot. */
export function encodeChildStart(frames: Frame[]): string {
  const stored: StoredCheckpoint = { base: 'snapshot', patch: [], frames };
  return JSON.stringify(stored);
}

/** Whether an encoded checkpoint is a fan-out child's delta against its parent's snapshot. */
export function isDeltaCheckpoint(encoded: string): boolean {
  return encoded.startsWith('{"base":"snapshot"');
}

/**
 * Decodes a checkpoint. A child's delta is applied to `snapshot()` (its parent's `shared` when it
 * fanned out), which is asked for only then.
 *
 * @param run - the run it belongs to, named in errors.
 * @throws QueueflowError `CORRUPT_RUN` naming the run and the problem when `encoded` is not a
 *   checkpoint (not JSON, no list of frames, no `shared` object or delta); Error when a delta comes
 *   without a snapshot (the parent's fan-out is gone).
 */
export function decodeCheckpoint(
  encoded: string,
  snapshot?: () => JsonObject | undefined,
  run?: { id: string; flow: string },
): Checkpoint {
  let stored: StoredCheckpoint;
  try {
    stored = JSON.parse(encoded) as StoredCheckpoint;
  } catch (error) {
    throw corruptRunError(run, `its checkpoint is not JSON (${(error as Error).message})`);
  }
  const problem = shapeProblem(stored);
  if (problem) throw corruptRunError(run, `its checkpoint ${problem}`);
  const checkpoint: Checkpoint = { shared: sharedOf(stored, snapshot), frames: stored.frames };
  if (stored.lastAction !== undefined) checkpoint.lastAction = stored.lastAction;
  return checkpoint;
}

/** The delta a child's stored checkpoint holds against its snapshot (its outcome's patch). */
export function deltaOf(encoded: string): PatchOperation[] | undefined {
  const stored = JSON.parse(encoded) as StoredCheckpoint;
  return 'base' in stored ? stored.patch : undefined;
}

/** What makes `stored` no checkpoint, if anything: checked before any field is used. */
function shapeProblem(stored: unknown): string | undefined {
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return 'is not a JSON object';
  const { frames, shared, patch } = stored as Record<string, unknown>;
  if (!Array.isArray(frames)) return 'has no list of frames';
  if ('base' in stored) return Array.isArray(patch) ? undefined : 'has no patch against its snapshot';
  return shared !== null && typeof shared === 'object' && !Array.isArray(shared) ? undefined : 'has no shared object';
}

function sharedOf(stored: StoredCheckpoint, snapshot: (() => JsonObject | undefined) | undefined): JsonObject {
  if (!('base' in stored)) return stored.shared;
  const base = snapshot?.();
  if (!base) throw new Error("the fan-out snapshot this child starts from is gone (its parent's fan-out expired?)");
  return jsonPatch.applyPatch(jsonPatch.deepClone(base) as JsonObject, stored.patch, false, true).newDocument;
}

/**
 * Encodes a parent's `shared` at a fan-out, refusing one over `maxBytes`; with `claim`, its large
 * values are set apart.
 */
export function encodeShared(shared: JsonObject, maxBytes = Infinity, claim?: ClaimCheck): string {
  const encoded = limited(JSON.stringify(shared), maxBytes, "the run's shared store");
  if (!claim?.mayHold(encoded)) return encoded;
  return JSON.stringify(claim.externalizeShared(shared, encoded));
}

export function decodeShared(encoded: string): JsonObject {
  return JSON.parse(encoded) as JsonObject;
}

export const encodeTarget = (target: StepTarget): string => JSON.stringify(target);
export const decodeTarget = (encoded: string): StepTarget => JSON.parse(encoded) as StepTarget;

export const encodeReplay = (replay: StepReplay): string => JSON.stringify(replay);
export const decodeReplay = (encoded: string): StepReplay => JSON.parse(encoded) as StepReplay;

export const encodeOutcome = (outcome: ChildOutcome): string => JSON.stringify(outcome);
export const decodeOutcome = (encoded: string): ChildOutcome => JSON.parse(encoded) as ChildOutcome;

export const encodeRequest = (request: FanOutRequest): string => JSON.stringify(request);
export const decodeRequest = (encoded: string): FanOutRequest => JSON.parse(encoded) as FanOutRequest;

export const encodeMessage = (message: Message): string => JSON.stringify(message);
export const decodeMessage = (encoded: string): Message => JSON.parse(encoded) as Message;

export const encodeErrorRecord = (record: ErrorRecord): string => JSON.stringify(record);
export const decodeErrorRecord = (encoded: string): ErrorRecord => JSON.parse(encoded) as ErrorRecord;

export const encodeRunError = (error: RunError): string => JSON.stringify(error);
export const decodeRunError = (encoded: string): RunError => JSON.parse(encoded) as RunError;

export const encodeConflict = (conflict: MergeConflict): string => JSON.stringify(conflict);
export const decodeConflict = (encoded: string): MergeConflict => JSON.parse(encoded) as MergeConflict;

/**
 * A committed step as its history stores it, in short keys (a run may keep thousands): `s` step,
 * `n` node, `a` action, `t` tries, `at` start (epoch ms), `ms` duration, `w` worker, `u` the JSON
 * Patch from `shared` after the step back to before it, `f` the same for the walk's frames, `fo`
 * 1 when the step fanned out, `m` the children a fan-in merged and their conflicts.
 */
export interface StoredStepRecord {
  s: number;
  n: string;
  a?: string;
  t: number;
  at: number;
  ms: number;
  w?: string;
  u: PatchOperation[];
  f: PatchOperation[];
  fo?: 1;
  m?: { children: number; conflicts: MergeConflict[] };
}

export const encodeStepRecord = (record: StoredStepRecord): string => JSON.stringify(record);
export const decodeStepRecord = (encoded: string): StoredStepRecord => JSON.parse(encoded) as StoredStepRecord;

export const encodeJson = (value: Json): string => JSON.stringify(value);
export const decodeJson = (encoded: string): Json => JSON.parse(encoded) as Json;

function limited(encoded: string, maxBytes: number, what: string): string {
  if (encoded.length <= maxBytes / 3) return encoded; // at most 3 bytes per UTF-16 unit: surely within
  const bytes = Buffer.byteLength(encoded);
  if (bytes > maxBytes) {
    throw new QueueflowError(
      'PAYLOAD_TOO_LARGE',
      `${what} is ${bytes} bytes, over the limit of ${maxBytes} bytes (maxCheckpointBytes)`,
      { retryable: false },
    );
  }
  return encoded;
}
