import jsonPatch from 'fast-json-patch';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Checkpoint, Frame } from '../interpreter/checkpoint.js';
import type { JsonObject } from '../json/json.js';
import type { MergeConflict, PatchOperation } from '../json/merge-patches.js';
import type { ClaimCheck } from './claim-check.js';
import { decodeStepRecord, encodeStepRecord, externalizePatch, type StoredStepRecord } from './codec.js';
import type { StepRecord } from './engine.js';

/**
 * The step history of a run (DESIGN "Operating runs"): one record per committed step, written in
 * the same atomic commit as the step. A record stores what it takes to go *back* one step (the
 * JSON Patch from `shared` after the step to `shared` before it, and the same for the walk's
 * frames), not copies: walking back from the run's current checkpoint gives `shared` at any
 * recorded step, and with it the forward patch each step made, a fork's starting point and a
 * studio's diff. Dropping the oldest records (the per-run cap) leaves the rest whole.
 */

/** What the driver knows of a step as it commits it. */
export interface StepFacts {
  step: number;
  node: string;
  action: string | undefined;
  tries: number;
  startedAt: number;
  endedAt: number;
  worker: string | undefined;
  /** The step fanned out: the checkpoint after it waits on children. */
  fannedOut?: boolean;
  /** A fan-in: the children merged and the conflicts. */
  merged?: { children: number; conflicts: MergeConflict[] };
}

/**
 * The encoded record of a step that turned `before` into `after`; with `claim`, the large values
 * its undo patches hold (what the step replaced or removed, in `shared` and in the frames) are
 * set apart.
 */
export function stepRecord(facts: StepFacts, before: Checkpoint, after: Checkpoint, claim?: ClaimCheck): string {
  const stored: StoredStepRecord = {
    s: facts.step,
    n: facts.node,
    t: facts.tries,
    at: facts.startedAt,
    ms: facts.endedAt - facts.startedAt,
    u: jsonPatch.compare(after.shared, before.shared),
    f: jsonPatch.compare(after.frames, before.frames),
  };
  if (facts.action !== undefined) stored.a = facts.action;
  if (facts.worker !== undefined) stored.w = facts.worker;
  if (facts.fannedOut) stored.fo = 1;
  if (facts.merged) stored.m = facts.merged;
  const encoded = encodeStepRecord(stored);
  if (!claim?.mayHold(encoded)) return encoded;
  stored.u = externalizePatch(stored.u, claim);
  stored.f = externalizePatch(stored.f, claim); // a fan-out's prep result: its list of items
  return encodeStepRecord(stored);
}

/**
 * The history of a run whose current checkpoint is `current`, from its encoded records (oldest
 * first): each record with the forward patch of its step.
 */
export function historyOf(current: Checkpoint, records: readonly string[]): StepRecord[] {
  const stored = records.map(decodeStepRecord);
  const out: StepRecord[] = new Array<StepRecord>(stored.length);
  let shared = jsonPatch.deepClone(current.shared) as JsonObject; // walked back in place
  for (let i = stored.length - 1; i >= 0; i--) {
    const record = stored[i]!;
    const undone = undoInPlace(shared, record.u);
    shared = undone.document;
    out[i] = {
      step: record.s,
      node: record.n,
      ...(record.a === undefined ? {} : { action: record.a }),
      tries: record.t,
      startedAt: record.at,
      endedAt: record.at + record.ms,
      ...(record.w === undefined ? {} : { worker: record.w }),
      patch: undone.forward,
      ...(record.m ? { merged: record.m } : {}),
    };
  }
  return out;
}

/**
 * The checkpoint of a run after `step` committed steps, walking back from `current` (taken after
 * `currentStep` steps) through the encoded records. After a step that fanned out, its `shared`
 * is the parent's as it fanned out, but its frames wait on children no checkpoint holds: a fork
 * checks {@link assertForkable} first.
 *
 * @throws QueueflowError `INVALID_OPTION` for a step outside what the records reach.
 */
export function checkpointAt(
  current: Checkpoint,
  currentStep: number,
  records: readonly string[],
  step: number,
  runId: string,
): Checkpoint {
  if (!Number.isInteger(step) || step < 0 || step > currentStep) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `run '${runId}' has committed ${currentStep} steps: expected \`step\` to be an integer from 0 to ${currentStep}, got ${String(step)}`,
      { retryable: false },
    );
  }
  const stored = records.map(decodeStepRecord);
  const oldest = stored[0]?.s ?? currentStep;
  if (step < oldest) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `run '${runId}' keeps the records of steps ${oldest} to ${currentStep - 1} only (older ones were dropped by the history cap): cannot rebuild step ${step}`,
      { retryable: false },
    );
  }
  let shared = jsonPatch.deepClone(current.shared) as JsonObject;
  let frames = jsonPatch.deepClone(current.frames) as Frame[];
  for (let i = stored.length - 1; i >= 0 && stored[i]!.s >= step; i--) {
    shared = undoInPlace(shared, stored[i]!.u).document;
    frames = undoInPlace(frames, stored[i]!.f).document;
  }
  const checkpoint: Checkpoint = { shared, frames };
  if (step === currentStep && current.lastAction !== undefined) checkpoint.lastAction = current.lastAction;
  return checkpoint;
}

/**
 * Refuses a fork after `step` committed steps when the step before it fanned out: the run then
 * waited on a fan-out's children, which a checkpoint does not hold.
 *
 * @throws QueueflowError `INVALID_OPTION`
 */
export function assertForkable(records: readonly string[], step: number, runId: string): void {
  const last = records.map(decodeStepRecord).find((record) => record.s === step - 1);
  if (last?.fo) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `step #${step - 1} of run '${runId}' fanned out, and from step #${step} on the run waited on its children, which a checkpoint does not hold: fork from step #${step - 1} (the state just before the fan-out, which the fork runs again) or from a step after its fan-in`,
      { retryable: false },
    );
  }
}

/**
 * Applies a step's undo patch to `document` in place (the state after the step becomes the state
 * before it) and returns the forward patch of the step: the inverse of each undo operation, in
 * reverse order, built from the values the undo replaced or removed.
 */
function undoInPlace<T>(document: T, undo: readonly PatchOperation[]): { document: T; forward: PatchOperation[] } {
  const forward: PatchOperation[] = [];
  let doc = document;
  for (const operation of undo) {
    const result = jsonPatch.applyOperation(doc, operation, false, true);
    doc = result.newDocument as T;
    const removed = result.removed === undefined ? undefined : (jsonPatch.deepClone(result.removed) as unknown);
    if (operation.op === 'add') forward.push({ op: 'remove', path: operation.path });
    else if (operation.op === 'remove') forward.push({ op: 'add', path: operation.path, value: removed });
    else if (operation.op === 'replace') forward.push({ op: 'replace', path: operation.path, value: removed });
  }
  return { document: doc, forward: forward.reverse() };
}
