import {
  QueueflowError,
  type ErrorRecord,
  type FinalRunStatus,
  type JsonObject,
  type ListRunsOptions,
  type MergeConflict,
  type Message,
  type RunError,
  type RunInfo,
  type RunResult,
  type RunStatus,
} from '@queueflow/runtime';
import type {
  Checkpoint,
  ChildOutcome,
  FanOutRequest,
  OutgoingMessage,
  ParkRequest,
  StepReplay,
  StepTarget,
} from '@queueflow/runtime/interpreter';
import type { RedisKeys } from './redis-keys.js';
import type { ScriptedRedis } from './scripts.js';

/** A run's record as stored in its Redis hash. */
export interface StoredRun {
  id: string;
  flow: string;
  fingerprint: string;
  status: RunStatus;
  step: number;
  /** Failed tries of the current step. */
  attempt: number;
  /** JSON; a fan-out child's first checkpoint has no `shared` (it starts from the snapshot). */
  checkpoint: string;
  target: StepTarget;
  createdAt: number;
  startedAt?: number;
  updatedAt: number;
  finishedAt?: number;
  lastAction?: string;
  error?: RunError;
  cancel: boolean;
  parent?: { id: string; step: number; index: number };
  /** Times the run has parked on a mailbox (wake jobs are `<id>-<step>-p<parkCount>`). */
  parkCount: number;
  /** The current step's park and delivered sends, when it parked (see StepReplay). */
  replay: StepReplay;
}

/** A waiting parent's fan-out as stored. */
export interface StoredFanOut {
  request: FanOutRequest;
  total: number;
  started: number;
  ended: number;
  failed: number;
  step: number;
}

/** What a commit did (the codes of commit-step.lua and fan-out.lua). */
export type CommitResult = 'committed' | 'stale' | 'cancelled' | 'missing';

/** What recording a child's end asks the caller to do (child-ended.lua). */
export type ChildEndedResult =
  | { type: 'ignored' }
  | { type: 'recorded'; startIndex: number | undefined }
  | { type: 'parent-ended' }
  | { type: 'fan-in' }
  | { type: 'duplicate' };

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

export interface RunStoreOptions {
  /** How long a finished run's record is kept, in seconds. */
  retentionSeconds: number;
  /** Error records kept per run. */
  maxErrors: number;
  /** Wakes the parked runs whose wake jobs a script returned (messages reached their mailboxes). */
  wake?: (jobIds: string[]) => Promise<void>;
}

const COMMIT_CODES: Record<number, CommitResult> = { 1: 'committed', 0: 'stale', 2: 'cancelled', [-1]: 'missing' };

/**
 * The run records in Redis: creating runs, atomic step commits guarded by the step counter,
 * fan-out bookkeeping, cancellation and the read side (`get`, `list`).
 */
export class RunStore {
  constructor(
    readonly redis: ScriptedRedis,
    readonly keys: RedisKeys,
    readonly options: RunStoreOptions,
  ) {}

  /** Writes a new run record and indexes it. */
  async create(run: { id: string; flow: string; fingerprint: string; checkpoint: string; target: StepTarget; now: number }): Promise<void> {
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
      throw new QueueflowError('RUN_NOT_FOUND', `no run '${runId}' under prefix '${this.keys.prefix}' (never started, or expired)`);
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
    const keys = report ? [...this.runKeys(runId), ...this.runKeys(report.parent.id)] : this.runKeys(runId);
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
    await this.wake(wakes);
    return {
      result: COMMIT_CODES[code] ?? 'stale',
      parent: report && parentCode !== -1 ? childEndedResult(parentCode, next) : undefined,
    };
  }

  /** Commits a fan-out step and creates the child records (fan-out.lua). */
  async fanOut(
    run: StoredRun,
    fields: {
      checkpoint: string;
      target: StepTarget;
      request: FanOutRequest;
      snapshot: string;
      total: number;
      startNow: number;
      /** Walks: the children's first target. */
      childTarget?: StepTarget;
      /** Walks: each child's checkpoint JSON without `shared`; items: each item's JSON. */
      perChild: string[];
      /** The step's sends. */
      outbox: OutgoingMessage[];
    },
  ): Promise<CommitResult> {
    const [code, wakes] = (await this.redis.fanOut(
      ...this.runKeys(run.id),
      position(run),
      fields.checkpoint,
      JSON.stringify(fields.target),
      Date.now(),
      JSON.stringify(storedRequest(fields.request)),
      fields.snapshot,
      fields.total,
      fields.startNow,
      fields.request.kind,
      this.keys.events(),
      run.id,
      this.options.retentionSeconds,
      run.flow,
      run.fingerprint,
      this.keys.run(''),
      fields.childTarget ? JSON.stringify(fields.childTarget) : '',
      this.keys.prefix,
      ...outboxArgs(fields.outbox),
      ...fields.perChild,
    )) as [number, string[]];
    await this.wake(wakes);
    return COMMIT_CODES[code] ?? 'stale';
  }

  /** Records a child's end on its parent (child-ended.lua). */
  async childEnded(
    parentId: string,
    parentStep: number,
    index: number,
    outcome: ChildOutcome,
    failFast: boolean,
    parentError: RunError,
    errorRecord?: ErrorRecord,
  ): Promise<ChildEndedResult> {
    const [code, next] = (await this.redis.childEnded(
      ...this.runKeys(parentId),
      parentStep,
      index,
      JSON.stringify(outcome),
      outcome.status === 'completed' ? 1 : 0,
      failFast ? 1 : 0,
      JSON.stringify(parentError),
      Date.now(),
      this.keys.events(),
      parentId,
      this.options.retentionSeconds,
      errorRecord ? JSON.stringify(errorRecord) : '',
    )) as [number, number];
    return childEndedResult(code, next);
  }


  /**
   * Cancels a run now (cancel-run.lua): `cancelled`, or `cancelled-waiting` when it was waiting
   * on a fan-out (its children still need cancelling).
   */
  async cancel(runId: string): Promise<'missing' | 'ended' | 'cancelled' | 'cancelled-waiting'> {
    const [code, wakes] = (await this.redis.cancelRun(
      ...this.runKeys(runId),
      Date.now(),
      this.keys.events(),
      runId,
      this.options.retentionSeconds,
      this.keys.prefix,
    )) as [number, string[]];
    await this.wake(wakes);
    return code === -1 ? 'missing' : code === 0 ? 'ended' : code === 1 ? 'cancelled' : 'cancelled-waiting';
  }

  /**
   * Cancels a fan-out's child runs (walks), and theirs in turn. Item children need nothing: their
   * jobs find the parent ended and stop.
   */
  async cancelChildren(parentId: string, parentStep: number, request: FanOutRequest): Promise<void> {
    if (request.kind !== 'walks') return;
    const total = Number(await this.redis.hget(this.keys.fanOut(parentId), 'total')) || 0;
    for (let index = 0; index < total; index++) {
      const id = childRunId(parentId, parentStep, index);
      if ((await this.cancel(id)) !== 'cancelled-waiting') continue;
      // The child was itself waiting on a fan-out: cancel that one too.
      const [step, fanOut] = await Promise.all([this.redis.hget(this.keys.run(id), 'step'), this.fanOutOf(id)]);
      if (fanOut && step !== null) await this.cancelChildren(id, Number(step), fanOut.request);
    }
  }

  async fanOutOf(parentId: string): Promise<StoredFanOut | undefined> {
    const [request, total, started, ended, failed, step] = await this.redis.hmget(
      this.keys.fanOut(parentId),
      'request',
      'total',
      'started',
      'ended',
      'failed',
      'step',
    );
    if (request === null || request === undefined) return undefined;
    return {
      request: JSON.parse(request) as FanOutRequest,
      total: Number(total),
      started: Number(started),
      ended: Number(ended),
      failed: Number(failed),
      step: Number(step),
    };
  }

  /** A fan-out's request (without per-child data) and snapshot, and its parent's flow identity. */
  async fanOutBasics(
    parentId: string,
  ): Promise<{ request: FanOutRequest; snapshot: string; step: number; flow: string; fingerprint: string } | undefined> {
    const [[request, snapshot, step], [flow, fingerprint]] = await Promise.all([
      this.redis.hmget(this.keys.fanOut(parentId), 'request', 'snapshot', 'step'),
      this.redis.hmget(this.keys.run(parentId), 'flow', 'fingerprint'),
    ]);
    if (!request || typeof snapshot !== 'string' || !flow || !fingerprint) return undefined;
    return { request: JSON.parse(request) as FanOutRequest, snapshot, step: Number(step), flow, fingerprint };
  }

  /** Input of item `index` of a ParallelBatchNode fan-out. */
  async itemOf(parentId: string, index: number): Promise<string | null> {
    return this.redis.hget(this.keys.fanOut(parentId), `i${index}`);
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

  /** Marks a queued run as running as its first step starts (mark-started.lua). */
  async markStarted(runId: string): Promise<void> {
    await this.redis.markStarted(this.keys.run(runId), Date.now());
  }

  /** Notes on a run why a worker refused its step (other code deployed); the run stays resumable. */
  async noteRefusal(runId: string, message: string): Promise<void> {
    await this.redis.hset(this.keys.run(runId), 'refusal', message);
  }

  /** Outcomes recorded so far, by child index. */
  async outcomesOf(parentId: string, total: number): Promise<(ChildOutcome | undefined)[]> {
    const hash = await this.redis.hgetall(this.keys.outcomes(parentId));
    const outcomes = new Array<ChildOutcome | undefined>(total);
    for (const [index, json] of Object.entries(hash)) outcomes[Number(index)] = JSON.parse(json) as ChildOutcome;
    return outcomes;
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
      ...(waiting ? { children: { total: Number(fanOut[0]), ended: Number(fanOut[1]), failed: Number(fanOut[2]) } } : {}),
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

  /**
   * Reserves a message for receive call `ordinal` of the run's step `step` (reserve-message.lua).
   * @throws Error when the run has moved past that step (a stale delivery must not take messages).
   */
  async reserve(runId: string, at: StepPosition, ordinal: number, address: string): Promise<Message | undefined> {
    const [code, message] = (await this.redis.reserveMessage(
      this.keys.run(runId),
      this.keys.reserved(runId),
      this.keys.mailbox(address),
      position(at),
      ordinal,
      address,
    )) as [number, string?];
    if (code === -1) throw new Error(`run '${runId}' is no longer at step ${at.step}: this run of the step is stale`);
    return code === 1 ? (JSON.parse(message!) as Message) : undefined;
  }

  /**
   * Parks the run on `park.address` (park-run.lua) and delivers the step's sends.
   * @returns the park count (the wake job id is `<id>-<step>-p<count>`) and whether a message is
   *   already there; `undefined` when the commit was refused (stale or cancelled).
   */
  async park(
    run: StoredRun,
    park: ParkRequest,
    sentTotal: number,
    outbox: OutgoingMessage[],
  ): Promise<{ result: CommitResult; parkCount: number; ready: boolean }> {
    const [code, parkCount, ready, wakes] = (await this.redis.parkRun(
      ...this.runKeys(run.id),
      position(run),
      JSON.stringify(park),
      park.address,
      sentTotal,
      Date.now(),
      run.id,
      this.keys.prefix,
      this.options.retentionSeconds,
      this.keys.events(),
      ...outboxArgs(outbox),
    )) as [number, number, number, string[]];
    await this.wake(wakes);
    return { result: COMMIT_CODES[code] ?? 'stale', parkCount, ready: ready === 1 };
  }

  /** Messages waiting at `address`. */
  async mailboxSize(address: string): Promise<number> {
    return this.redis.llen(this.keys.mailbox(address));
  }

  /** Appends a message to a mailbox from outside any run (send-message.lua) and wakes its waiters. */
  async send(address: string, message: Message): Promise<void> {
    const wakes = (await this.redis.sendMessage(
      this.keys.mailbox(address),
      this.keys.mailboxWaiters(address),
      JSON.stringify(message),
    )) as string[];
    await this.wake(wakes);
  }

  private async wake(jobIds: string[] | undefined): Promise<void> {
    if (jobIds && jobIds.length > 0 && this.options.wake) await this.options.wake(jobIds);
  }

  private runKeys(runId: string): [string, string, string, string, string, string] {
    return [
      this.keys.run(runId),
      this.keys.errors(runId),
      this.keys.conflicts(runId),
      this.keys.fanOut(runId),
      this.keys.outcomes(runId),
      this.keys.reserved(runId),
    ];
  }
}

/** Where a step started: its step counter and the run's park count then (see atStep in Lua). */
export interface StepPosition {
  step: number;
  parkCount: number;
}

function position(at: StepPosition): string {
  return `${at.step}:${at.parkCount}`;
}

/** The outbox as script arguments: its size, then (address, message JSON) pairs. */
function outboxArgs(outbox: OutgoingMessage[] | undefined): (string | number)[] {
  const args: (string | number)[] = [outbox?.length ?? 0];
  for (const { address, message } of outbox ?? []) args.push(address, JSON.stringify(message));
  return args;
}

function childEndedResult(code: number, next: number): ChildEndedResult {
  switch (code) {
    case 1:
      return { type: 'recorded', startIndex: next >= 0 ? next : undefined };
    case 2:
      return { type: 'parent-ended' };
    case 3:
      return { type: 'fan-in' };
    case 4:
      return { type: 'duplicate' };
    default:
      return { type: 'ignored' };
  }
}

/** Id of child `index` of the fan-out a parent made at `parentStep` (see fan-out.lua). */
export function childRunId(parentId: string, parentStep: number, index: number): string {
  return `${parentId}.${parentStep}.${index}`;
}

export function isFinal(status: RunStatus | undefined): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** The request as stored on the parent: without the per-child data (params, items). */
function storedRequest(request: FanOutRequest): FanOutRequest {
  return request.kind === 'walks' ? { ...request, params: [] } : { ...request, items: [] };
}

function parseRun(id: string, hash: Record<string, string>): StoredRun {
  const number = (field: string): number | undefined => (hash[field] === undefined ? undefined : Number(hash[field]));
  return {
    id,
    flow: hash.flow ?? '',
    fingerprint: hash.fingerprint ?? '',
    status: hash.status as RunStatus,
    step: number('step') ?? 0,
    attempt: number('attempt') ?? 0,
    checkpoint: hash.checkpoint ?? '{"shared":{},"frames":[]}',
    target: hash.target ? (JSON.parse(hash.target) as StepTarget) : { node: undefined, maxAttempts: 1 },
    createdAt: number('createdAt') ?? 0,
    ...(hash.startedAt !== undefined ? { startedAt: Number(hash.startedAt) } : {}),
    updatedAt: number('updatedAt') ?? 0,
    ...(hash.finishedAt !== undefined ? { finishedAt: Number(hash.finishedAt) } : {}),
    ...(hash.lastAction !== undefined ? { lastAction: hash.lastAction } : {}),
    ...(hash.error ? { error: JSON.parse(hash.error) as RunError } : {}),
    cancel: hash.cancel === '1',
    parkCount: Number(hash.parkCount ?? 0),
    replay: {
      sent: Number(hash.sent ?? 0),
      ...(hash.parked ? { parked: JSON.parse(hash.parked) as ParkRequest } : {}),
    },
    ...(hash.parentId !== undefined
      ? { parent: { id: hash.parentId, step: Number(hash.parentStep), index: Number(hash.childIndex) } }
      : {}),
  };
}

function throwOnMultiError(results: [Error | null, unknown][] | null): void {
  if (!results) throw new Error('Redis transaction was aborted');
  for (const [error] of results) if (error) throw error;
}
