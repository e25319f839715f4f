import jsonPatch from 'fast-json-patch';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { Checkpoint } from '../interpreter/checkpoint.js';
import type { FlowRegistry } from '../interpreter/flow-definition.js';
import { targetOf, walkParams } from '../interpreter/walk.js';
import { assertJson, type JsonObject } from '../json/json.js';
import type { PatchOperation } from '../json/merge-patches.js';
import { encodeCheckpoint } from './codec.js';
import type { LargeValues } from './large-values.js';
import type { ForkOptions, StepRecord } from './engine.js';
import { newRunId } from './run-id.js';
import type { NewRun, RunStore, StoredRun } from './run-store.js';
import { assertForkable, checkpointAt, historyOf } from './step-history.js';

/**
 * Reading a run's past and starting from it (DESIGN "Operating runs"; LangGraph's time travel):
 * its step history, its `shared` at any recorded step, and a fork from a committed step.
 */
export class TimeTravel {
  constructor(
    private readonly store: RunStore,
    private readonly registry: FlowRegistry,
    private readonly checkpointOf: (run: StoredRun) => Promise<Checkpoint>,
    private readonly notFound: (runId: string) => Error,
    private readonly settings: { now: () => number; maxCheckpointBytes: number },
    /** Puts records whose values were set apart back together; sets a fork's apart. */
    private readonly values: LargeValues,
  ) {}

  /** The run's committed steps, oldest first. @throws RUN_NOT_FOUND */
  async history(runId: string): Promise<StepRecord[]> {
    const { run, records } = await this.read(runId);
    return historyOf(await this.checkpointOf(run), records);
  }

  /** The run's `shared` after `step` committed steps. @throws RUN_NOT_FOUND, INVALID_OPTION */
  async sharedAt(runId: string, step: number): Promise<JsonObject> {
    const { run, records } = await this.read(runId);
    return checkpointAt(await this.checkpointOf(run), run.step, records, step, runId).shared;
  }

  /**
   * A new run (not yet written) starting from the checkpoint after `options.step` committed steps
   * of `runId`, with `options.patch` applied to its `shared`.
   * @throws RUN_NOT_FOUND; INVALID_OPTION for a step without a checkpoint, a patch that does not
   *   apply or that replaces the root of `shared` (path `''`), or a flow whose code this engine does not have.
   */
  async forkOf(runId: string, options: ForkOptions): Promise<NewRun> {
    const { run, records } = await this.read(runId);
    const checkpoint = checkpointAt(await this.checkpointOf(run), run.step, records, options.step, runId);
    assertForkable(records, options.step, runId);
    if (checkpoint.frames.length === 0) {
      throw new QueueflowError(
        'INVALID_OPTION',
        `run '${runId}' ended with step #${options.step - 1}, so a fork from step #${options.step} has nothing to run: fork from a step from #0 to #${options.step - 1} (the fork runs that step again)`,
        { retryable: false },
      );
    }
    if (options.patch !== undefined) checkpoint.shared = patched(checkpoint.shared, options.patch, runId);
    if (options.params !== undefined) {
      assertJson(options.params, 'params');
      const { frames } = checkpoint;
      frames[0] = { ...frames[0]!, params: options.params };
      // Each frame's params are those its parent's walk gave it (rule S6): rebuilt up the stack,
      // so that the nodes the fork visits get the new params, not the source run's.
      for (let i = 1; i < frames.length; i++) frames[i] = { ...frames[i]!, params: walkParams(frames[i - 1]!) };
    }
    assertJson(checkpoint.shared, 'shared');
    const graph = this.registry.graph(run.flow);
    if (graph.fingerprint !== run.fingerprint) {
      throw new QueueflowError(
        'INVALID_OPTION',
        `flow '${run.flow}' has graph fingerprint ${graph.fingerprint} here but ${run.fingerprint} in run '${runId}': fork it where its code runs`,
        { retryable: false },
      );
    }
    const claim = this.values.check();
    const encoded = encodeCheckpoint(checkpoint, this.settings.maxCheckpointBytes, undefined, claim);
    const values = claim.claim();
    return {
      id: newRunId(),
      flow: run.flow,
      fingerprint: run.fingerprint,
      checkpoint: encoded,
      target: targetOf(checkpoint, graph),
      now: this.settings.now(),
      forkedFrom: { runId, step: options.step },
      ...(values === undefined ? {} : { values }),
    };
  }

  private async read(runId: string): Promise<{ run: StoredRun; records: string[] }> {
    const [run, records] = await Promise.all([this.store.load(runId), this.store.history(runId)]);
    if (!run || !records) throw this.notFound(runId);
    return { run, records: await Promise.all(records.map((record) => this.values.inflateOf(record, run))) };
  }
}

/** A JSON Pointer through a key that would reach an object's prototype (json.ts refuses such keys in `shared`). */
const BANNED_POINTER = /(^|\/)(__proto__|constructor\/prototype)(\/|$)/;

function patched(shared: JsonObject, patch: PatchOperation[], runId: string): JsonObject {
  for (const [index, operation] of patch.entries()) {
    const pointers = [operation.path, (operation as { from?: unknown }).from];
    const banned = pointers.find((pointer) => typeof pointer === 'string' && BANNED_POINTER.test(pointer));
    if (banned !== undefined) {
      throw new QueueflowError(
        'INVALID_OPTION',
        `the patch for a fork of run '${runId}' names ${JSON.stringify(banned)} at operation ${index}: '__proto__' and 'constructor/prototype' cannot be keys of shared`,
        { retryable: false },
      );
    }
    // Path '' is the whole document: shared would be something else than the run's (or no object).
    if (operation.path === '' && operation.op !== 'test') {
      throw new QueueflowError(
        'INVALID_OPTION',
        `the patch for a fork of run '${runId}' replaces the root of shared at operation ${index} (${operation.op} at path ''): patch its members instead (path '/<key>')`,
        { retryable: false },
      );
    }
  }
  const problem = jsonPatch.validate(patch, shared);
  if (problem) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `the patch for a fork of run '${runId}' does not apply: ${problem.name} at operation ${problem.index} (${problem.message.split('\n')[0]})`,
      { retryable: false },
    );
  }
  return jsonPatch.applyPatch(shared, patch, false, true).newDocument;
}
