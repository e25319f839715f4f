import {
  QueueflowError,
  type ErrorRecord,
  type FinalRunStatus,
  type JsonObject,
  type ListRunsOptions,
  type MergeConflict,
  type RunError,
  type RunInfo,
  type RunResult,
  type RunStatus,
} from '@queueflow/runtime';
import type { Checkpoint, ChildOutcome, OutgoingMessage, StepTarget } from '@queueflow/runtime/interpreter';
import type { RedisKeys } from './redis-keys.js';
import type { ScriptedRedis } from './scripts.js';
import {
  childEndedResult,
  commitResult,
  outboxArgs,
  wakeParked,
  type ChildEndedResult,
  type CommitResult,
  type StoreOptions,
} from './script-replies.js';
import { isFinal, parseRun, position, type StepPosition, type StoredRun } from './stored-run.js';

export interface CommitFields {
  checkpoint?: string;
  target?: StepTarget;
  /** Errors to append to the run's history; for mode `failed` the last is the one that failed it. */
  errorRecords?: ErrorRecord[];
  /** The step's sends, delivered if it commits (modes next and completed). */
  outbox?: OutgoingMessage[];
  runError?: RunError;
  lastAction?: string;
  conflicts?: MergeConflict[];
}

/** How a fan-out child's end is reported to its parent by the commit that ends it. */
export interface ChildReport {
  parent: { id: string; step: number; index: number };
  /** The child's outcome if this commit ends it completed or failed (cancelled is built in). */
  outcome?: ChildOutcome;
  failFast: boolean;
  /** The parent's error if it fails fast because of this child. */
  parentError: RunError;
}

/**
 * The run records in Redis: creating runs, atomic step commits guarded by the step counter,
 * cancellation and the read side (`get`, `list`). Fan-outs: {@link FanOutStore}; mailboxes:
 * {@link MailboxStore}.
 */
export class RunStore {
  constructor(
    readonly redis: ScriptedRedis,
    readonly keys: RedisKeys,
    readonly options: StoreOptions,
  ) {}

  /** Writes a new run record and indexes it. */
  async create(run: {
    id: string;
    flow: string;
    fingerprint: string;
    checkpoint: string;
    target: StepTarget;
    now: number;
  }): Promise<void> {
    await this.redis
      .multi()
      .hset(this.keys.run(run.id), {
        flow: run.flow,
        fingerprint: run.fingerprint,
        status: 'queued',
        step: 0,
        attempt: 0,
        checkpoint: run.checkpoint,
        target: JSON.stringify(run.target),
        createdAt: run.now,
        updatedAt: run.now,
      })
      .zadd(this.keys.runs(), run.now, run.id)
      .exec()
      .then(throwOnMultiError);
  }

  /** Removes a run that could not be started (its first step could not be enqueued). */
  async discard(runId: string): Promise<void> {
    await this.redis.multi().del(this.keys.run(runId)).zrem(this.keys.runs(), runId).exec();
  }

  async load(runId: string): Promise<StoredRun | undefined> {
    const hash = await this.redis.hgetall(this.keys.run(runId));
    return hash.status ? parseRun(runId, hash) : undefined;
  }

  async status(runId: string): Promise<RunStatus | undefined> {
    return ((await this.redis.hget(this.keys.run(runId), 'status')) ?? undefined) as RunStatus | undefined;
  }

  /** The run's result once it has ended; `undefined` while it runs. @throws QueueflowError RUN_NOT_FOUND. */
  async resultIfEnded(runId: string): Promise<RunResult | undefined> {
    const status = await this.status(runId);
    if (status === undefined) {
      throw new QueueflowError(
        'RUN_NOT_FOUND',
        `no run '${runId}' under prefix '${this.keys.prefix}' (never started, or expired)`,
      );
    }
    if (!isFinal(status)) return undefined;
    const run = await this.load(runId);
    if (!run) return undefined;
    const { shared } = await this.checkpointOf(run);
    return {
      id: runId,
      status: run.status as FinalRunStatus,
      shared,
      ...(run.lastAction === undefined ? {} : { lastAction: run.lastAction }),
      ...(run.error ? { error: run.error } : {}),
    };
  }

  /** The run's checkpoint; a fan-out child's first one gets its parent's snapshot as `shared`. */
  async checkpointOf(run: StoredRun): Promise<Checkpoint> {
    const checkpoint = JSON.parse(run.checkpoint) as Checkpoint;
    if (checkpoint.shared === undefined) {
      if (!run.parent) throw new Error(`run '${run.id}' has a checkpoint without shared and no parent`);
      checkpoint.shared = await this.snapshotOf(run.parent.id);
    }
    return checkpoint;
  }

  /** The `shared` a parent had when it fanned out. */
  async snapshotOf(parentId: string): Promise<JsonObject> {
    const snapshot = await this.redis.hget(this.keys.fanOut(parentId), 'snapshot');
    if (snapshot === null) throw new Error(`the fan-out snapshot of run '${parentId}' is gone (expired?)`);
    return JSON.parse(snapshot) as JsonObject;
  }

  /**
   * Commits a step's outcome if the run still stands at `expectedStep` (commit-step.lua). For a
   * fan-out child, `report` records its end on the parent in the same script when it ends here.
   */
  async commit(
    runId: string,
    at: StepPosition,
    mode: 'next' | 'retry' | 'completed' | 'failed',
    fields: CommitFields,
    report?: ChildReport,
  ): Promise<{ result: CommitResult; parent: ChildEndedResult | undefined }> {
    const keys = report
      ? [...this.keys.runKeys(runId), ...this.keys.runKeys(report.parent.id)]
      : this.keys.runKeys(runId);
    const [code, parentCode, next, wakes] = (await this.redis.commitStep(
      keys.length,
      ...keys,
      position(at),
      mode,
      fields.checkpoint ?? '',
      fields.target ? JSON.stringify(fields.target) : '',
      Date.now(),
      fields.errorRecords && fields.errorRecords.length > 0 ? JSON.stringify(fields.errorRecords) : '',
      fields.runError ? JSON.stringify(fields.runError) : '',
      fields.lastAction ?? '',
      this.options.retentionSeconds,
      this.keys.events(),
      runId,
      this.options.maxErrors,
      fields.conflicts && fields.conflicts.length > 0 ? JSON.stringify(fields.conflicts) : '',
      ...(report
        ? [
            report.parent.id,
            report.parent.step,
            report.parent.index,
            report.outcome ? JSON.stringify(report.outcome) : '',
            report.failFast ? 1 : 0,
            JSON.stringify(report.parentError),
          ]
        : ['', '', '', '', '', '']),
      this.keys.prefix,
      ...outboxArgs(fields.outbox),
    )) as [number, number, number, string[]];
    await wakeParked(this.options, wakes);
    return {
      result: commitResult(code),
      parent: report && parentCode !== -1 ? childEndedResult(parentCode, next) : undefined,
    };
  }

  /**
   * Cancels a run now (cancel-run.lua): `cancelled`, or `cancelled-waiting` when it was waiting
   * on a fan-out (its children still need cancelling).
   */
  async cancel(runId: string): Promise<'missing' | 'ended' | 'cancelled' | 'cancelled-waiting'> {
    const [code, wakes] = (await this.redis.cancelRun(
      ...this.keys.runKeys(runId),
      Date.now(),
      this.keys.events(),
      runId,
      this.options.retentionSeconds,
      this.keys.prefix,
    )) as [number, string[]];
    await wakeParked(this.options, wakes);
    return code === -1 ? 'missing' : code === 0 ? 'ended' : code === 1 ? 'cancelled' : 'cancelled-waiting';
  }

  /** Appends error records to a run's history (failed tries of a fan-out item). */
  async appendErrors(runId: string, records: ErrorRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.redis
      .multi()
      .rpush(this.keys.errors(runId), ...records.map((record) => JSON.stringify(record)))
      .ltrim(this.keys.errors(runId), -this.options.maxErrors, -1)
      .exec();
  }

  /**
   * Loads a run for the step a worker is about to take, marking a queued run as running when
   * its flow and graph fingerprint are among `runnable` (load-run.lua): one round trip.
   */
  async loadForStep(
    runId: string,
    runnable: readonly (readonly [flow: string, fingerprint: string])[],
  ): Promise<StoredRun | undefined> {
    const flat = (await this.redis.loadRun(this.keys.run(runId), Date.now(), ...runnable.flat())) as string[];
    const hash: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
    return hash.status ? parseRun(runId, hash) : undefined;
  }

  /** Notes on a run why a worker refused its step (other code deployed); the run stays resumable. */
  async noteRefusal(runId: string, message: string): Promise<void> {
    await this.redis.hset(this.keys.run(runId), 'refusal', message);
  }

  /** The run's record as {@link RunInfo}, or `undefined` when there is none (or it expired). */
  async info(runId: string): Promise<RunInfo | undefined> {
    const [hash, errors, conflicts, fanOut] = await Promise.all([
      this.redis.hgetall(this.keys.run(runId)),
      this.redis.lrange(this.keys.errors(runId), 0, -1),
      this.redis.lrange(this.keys.conflicts(runId), 0, -1),
      this.redis.hmget(this.keys.fanOut(runId), 'total', 'ended', 'failed'),
    ]);
    if (!hash.status) return undefined;
    const run = parseRun(runId, hash);
    let shared: JsonObject = {};
    try {
      shared = (await this.checkpointOf(run)).shared;
    } catch {
      // A child whose parent's snapshot expired: report it without shared.
    }
    const waiting = run.status === 'waiting' && fanOut[0] !== null;
    return {
      id: run.id,
      flow: run.flow,
      status: run.status,
      ...(run.target.node !== undefined && !isFinal(run.status) ? { currentNode: run.target.node } : {}),
      steps: run.step,
      attempts: run.attempt,
      createdAt: run.createdAt,
      ...(run.startedAt !== undefined ? { startedAt: run.startedAt } : {}),
      ...(run.finishedAt !== undefined ? { finishedAt: run.finishedAt } : {}),
      updatedAt: run.updatedAt,
      ...(run.lastAction !== undefined ? { lastAction: run.lastAction } : {}),
      ...(run.error ? { error: run.error } : {}),
      errors: errors.map((e) => JSON.parse(e) as ErrorRecord),
      conflicts: conflicts.map((c) => JSON.parse(c) as MergeConflict),
      ...(run.parent ? { parentId: run.parent.id } : {}),
      ...(waiting
        ? { children: { total: Number(fanOut[0]), ended: Number(fanOut[1]), failed: Number(fanOut[2]) } }
        : {}),
      ...(run.refusal !== undefined && !isFinal(run.status) ? { refusal: run.refusal } : {}),
      shared,
    };
  }

  /** Runs started by clients (fan-out children are not listed), newest first. */
  async list(options: ListRunsOptions = {}): Promise<RunInfo[]> {
    const limit = options.limit ?? 100;
    const found: RunInfo[] = [];
    const pageSize = Math.max(limit * 2, 50);
    for (let offset = 0; found.length < limit; offset += pageSize) {
      const ids = await this.redis.zrevrange(this.keys.runs(), offset, offset + pageSize - 1);
      if (ids.length === 0) break;
      const infos = await Promise.all(ids.map((id) => this.info(id)));
      const expired: string[] = [];
      infos.forEach((info, i) => {
        if (!info) expired.push(ids[i]!);
        else if ((!options.status || info.status === options.status) && (!options.flow || info.flow === options.flow)) {
          if (found.length < limit) found.push(info);
        }
      });
      // Records expire on their own; their index entries are dropped when met.
      if (expired.length > 0) await this.redis.zrem(this.keys.runs(), ...expired);
    }
    return found;
  }
}

function throwOnMultiError(results: [Error | null, unknown][] | null): void {
  if (!results) throw new Error('Redis transaction was aborted');
  for (const [error] of results) if (error) throw error;
}
