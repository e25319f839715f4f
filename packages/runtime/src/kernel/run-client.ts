import { nanoid } from 'nanoid';
import { QueueflowError } from '../errors/queueflow-error.js';
import type { FlowDefinition, FlowRegistry } from '../interpreter/flow-definition.js';
import type { Checkpoint } from '../interpreter/checkpoint.js';
import type { Json, JsonObject } from '../json/json.js';
import { initialCheckpoint } from '../interpreter/walk.js';
import { checkAddress, checkMessageBody } from '../mailbox/message.js';
import { cancelRun } from './cancel-run.js';
import type { Clock } from './clock.js';
import { decodeCheckpoint, decodeShared, encodeCheckpoint } from './codec.js';
import type { ListRunsOptions, RunHandle, RunInfo, RunOptions, RunResult, RunSummary } from './engine.js';
import { checkRunInput } from './run-input.js';
import { newRunId } from './run-id.js';
import { runInfoOf, runResultOf, runSummaryOf } from './run-info.js';
import { isFinal, type NewRun, type RunStore, type StoredRun } from './run-store.js';
import type { ResultWaiter } from './result-waiter.js';
import type { Scheduler } from './scheduler.js';

export interface RunClientOptions {
  clock: Clock;
  /** Largest encoded checkpoint, in bytes. */
  maxCheckpointBytes: number;
  /** Where runs live, for messages naming an unknown run, e.g. `under prefix '{qf}'`. */
  where: string;
}

/**
 * A new run's record, checked and encoded, not written anywhere yet: an engine may check input
 * before it connects to its store.
 *
 * @throws QueueflowError `NOT_JSON` naming the path, `UNKNOWN_FLOW`, `PAYLOAD_TOO_LARGE`.
 */
export function prepareRun(
  registry: FlowRegistry,
  flow: FlowDefinition | string,
  shared: object,
  options: RunOptions,
  settings: { clock: Clock; maxCheckpointBytes: number },
): NewRun {
  const graph = registry.graph(flow);
  const input = checkRunInput(shared, options.params);
  const { checkpoint, target } = initialCheckpoint(graph, input.shared, input.params);
  return {
    id: newRunId(),
    flow: graph.flowName,
    fingerprint: graph.fingerprint,
    checkpoint: encodeCheckpoint(checkpoint, settings.maxCheckpointBytes),
    target,
    now: settings.clock.now(),
  };
}

/**
 * The client side of the run kernel: what `Engine` promises (start, get, list, result, cancel,
 * send), written once over a {@link RunStore} and a {@link Scheduler}. `LocalEngine` and
 * `RedisEngine` are this client plus the store, scheduler and connections they own.
 */
export class RunClient {
  constructor(
    private readonly store: RunStore,
    private readonly scheduler: Scheduler,
    private readonly registry: FlowRegistry,
    private readonly waiter: ResultWaiter,
    private readonly options: RunClientOptions,
  ) {}

  /**
   * Starts a run: checks its input, writes its record and adds its first step.
   * @throws QueueflowError `NOT_JSON` naming the path, `UNKNOWN_FLOW`, `PAYLOAD_TOO_LARGE`; nothing is written then.
   */
  async start<S extends object>(
    flow: FlowDefinition | string,
    shared: S,
    options: RunOptions = {},
  ): Promise<RunHandle<S>> {
    return this.startPrepared(prepareRun(this.registry, flow, shared, options, this.options));
  }

  /** Starts a run {@link prepareRun} has checked. */
  async startPrepared<S extends object>(run: NewRun): Promise<RunHandle<S>> {
    await this.store.create(run);
    try {
      await this.scheduler.addStep(run.id, 0, run.target);
    } catch (error) {
      await this.store.discard(run.id).catch(() => {});
      throw error;
    }
    return this.handle<S>(run.id);
  }

  /** A handle on run `runId`. */
  handle<S extends object = JsonObject>(runId: string): RunHandle<S> {
    return { id: runId, result: () => this.waiter.wait(runId) as Promise<RunResult<S>> };
  }

  /** Resolves when run `runId` has ended. @throws QueueflowError RUN_NOT_FOUND for an unknown id. */
  result(runId: string): Promise<RunResult> {
    return this.waiter.wait(runId);
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    const record = await this.store.record(runId);
    if (!record) return undefined;
    let shared: JsonObject = {};
    try {
      shared = (await this.checkpointOf(record.run)).shared;
    } catch {
      // A child whose parent's snapshot expired: reported without shared.
    }
    return runInfoOf(record, shared);
  }

  async list(options: ListRunsOptions = {}): Promise<RunSummary[]> {
    const runs = await this.store.list({ ...options, limit: options.limit ?? 100 });
    return runs.map(runSummaryOf);
  }

  /** @throws QueueflowError RUN_NOT_FOUND for an unknown (or expired) run id. */
  async cancel(runId: string): Promise<void> {
    const result = await cancelRun(this.store, this.scheduler, runId);
    if (result === 'missing') throw this.notFound(runId);
  }

  /**
   * Sends `body` to the mailbox at `address` from outside any run; runs parked on it wake.
   * @throws QueueflowError `NOT_JSON`, `PAYLOAD_TOO_LARGE`; TypeError for a bad address.
   */
  async send(address: string, body: Json): Promise<void> {
    checkAddress('send', address);
    checkMessageBody(body, `message body sent to '${address}'`);
    const { wakes } = await this.store.send(address, { id: `m.${nanoid()}`, body, sentAt: this.options.clock.now() });
    await this.scheduler.promote(wakes);
  }

  /** The run's result once it has ended; `undefined` while it runs. @throws QueueflowError RUN_NOT_FOUND. */
  async resultIfEnded(runId: string): Promise<RunResult | undefined> {
    const position = await this.store.position(runId);
    if (!position) throw this.notFound(runId, ' (never started, or expired)');
    if (!isFinal(position.status)) return undefined;
    const run = await this.store.load(runId);
    if (!run || !isFinal(run.status)) return undefined;
    const { shared } = await this.checkpointOf(run);
    return runResultOf(run as StoredRun & { status: typeof run.status }, shared);
  }

  private async checkpointOf(run: StoredRun): Promise<Checkpoint> {
    const snapshot = run.parent ? await this.store.snapshotOf(run.parent.id) : undefined;
    return decodeCheckpoint(run.checkpoint, () => (snapshot === undefined ? undefined : decodeShared(snapshot)));
  }

  private notFound(runId: string, why = ''): QueueflowError {
    return new QueueflowError('RUN_NOT_FOUND', `no run '${runId}' ${this.options.where}${why}`);
  }
}
