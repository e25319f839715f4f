import { nanoid } from 'nanoid';
import type { ErrorRecord, Json, ListRunsOptions, RunStatus } from '@queueflow/runtime';
import {
  decodeConflict,
  decodeErrorRecord,
  decodeJson,
  decodeMessage,
  decodeOutcome,
  decodeRequest,
  encodeErrorRecord,
  encodeMessage,
  encodeOutcome,
  encodeReplay,
  encodeRequest,
  encodeRunError,
  encodeTarget,
  decodeTarget,
  encodeConflict,
  type CancelResult,
  type ChildEndReport,
  type ChildEndedResult,
  type ChildOutcome,
  type ChildReport,
  type CommitFields,
  type CommitMode,
  type CommitReply,
  type CommitResult,
  type FanOutCommit,
  type LoadedRun,
  type NewRun,
  childOutcomeOf,
  childRunId,
  type OutgoingMessage,
  type ReopenReply,
  type StoredMailbox,
  type StoredWorker,
  type WorkerBeat,
  type ParkReply,
  type ParkRequest,
  type RunRecord,
  type RunStore,
  type Runnable,
  type StepReplay,
  type StoredFanOut,
  type StoredRun,
  type StoredStreamEntry,
  type StreamAppendReply,
  type StreamWrite,
  type BudgetHold,
  type BudgetReply,
  type BudgetRequest,
  type BudgetState,
  DEFAULT_MAX_STREAM_ENTRIES,
  systemClock,
  type ValueClaim,
} from '@queueflow/runtime/kernel';
import type { FinalRunStatus } from '@queueflow/runtime';
import type { Clock } from '@queueflow/runtime';
import type { Message } from '@queueflow/runtime';
import { RedisBudgets } from './redis-budgets.js';
import type { RedisKeys } from './redis-keys.js';
import { hashOfList, positionOf, runOfHash } from './run-hash.js';
import { escapeGlob } from './purge-prefix.js';
import { scanKeys } from './scan-keys.js';
import type { ScriptedRedis } from './scripts.js';
import type { RawStreamEntry, StreamReader } from './stream-reader.js';

/** Settings of the Redis store. */
export interface RedisStoreOptions {
  /** How long a finished run's record is kept, in seconds. */
  retentionSeconds: number;
  /** Error records kept per run. */
  maxErrors: number;
  /** Step records kept per run. */
  maxStepRecords: number;
  /** Stream entries kept per run (about: XADD MAXLEN ~). @defaultValue 10000 */
  maxStreamEntries?: number;
}

/** Fields `list` and `summaries` read: the checkpoint (possibly megabytes) is not among them. */
const SUMMARY_FIELDS = [
  'status',
  'flow',
  'fingerprint',
  'step',
  'attempt',
  'target',
  'createdAt',
  'startedAt',
  'updatedAt',
  'finishedAt',
  'lastAction',
  'error',
  'refusal',
  'parentId',
  'parentStep',
  'childIndex',
  'parkCount',
  'replay',
  'forkedFrom',
  'retries',
  'throttledBy',
  'priority',
] as const;

/**
 * Outcomes read per HSCAN call (see outcomesOf): a page of 5,000 of a million-child fan-in held
 * Redis 34 to 45 ms; 1,000 keep each call to a few ms, for 1,000 calls in all.
 */
const OUTCOMES_PAGE = 1000;

const COMMIT_CODES: Record<number, CommitResult> = { 1: 'committed', 0: 'stale', [-1]: 'missing' };
const CANCEL_CODES: Record<number, CancelResult> = {
  [-1]: 'missing',
  0: 'ended',
  1: 'cancelled',
  2: 'cancelled-waiting',
};

/**
 * How long a value's text staged for a transition is kept unless the transition claims it, in
 * seconds (see RedisRunStore.stageValues): a transition lands within moments of its staging.
 */
const STAGED_VALUE_SECONDS = 3600;

/**
 * The run store in Redis (DESIGN "The run kernel"): each transition of the `RunStore`
 * contract is one Lua script (src/lua, each headed by its KEYS, ARGV and return codes), so it is
 * atomic whatever else runs; reads are plain commands. Keys come from {@link RedisKeys}.
 */
export class RedisRunStore implements RunStore {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    private readonly options: RedisStoreOptions,
    /** The time source of the transitions the store stamps itself (start, cancel, park). */
    private readonly clock: Clock = systemClock,
    /**
     * Where blocking stream reads wait (one connection for every follower); without one, a
     * blocking read polls every 50 ms.
     */
    private readonly reader?: StreamReader,
  ) {
    this.budgets = new RedisBudgets(redis, keys);
    this.settings = {
      retention: options.retentionSeconds,
      maxErrors: options.maxErrors,
      maxRecords: options.maxStepRecords,
      channel: keys.events(),
      changes: keys.changes(),
      runs: keys.runs(),
      expiries: keys.runsExpiries(),
      mailboxPrefix: keys.mailboxPrefix(),
      waitersPrefix: keys.waitersPrefix(),
      valuePrefix: keys.valuePrefix(),
      valuesSuffix: keys.valuesSuffix(),
      runPrefix: keys.runPrefix(),
    };
  }

  /** The options every transition script takes (see {@link RedisRunStore.common}), built once. */
  private readonly settings: Readonly<Record<string, string | number>>;

  /** Flow control: the budgets of nodes' `limits`. */
  private readonly budgets: RedisBudgets;

  async create(run: NewRun): Promise<{ created: true } | { created: false; runId: string }> {
    const keys = [this.keys.run(run.id), this.keys.runs(), this.keys.runsSequence()];
    if (run.idempotencyKey !== undefined) keys.push(this.keys.idempotency(run.idempotencyKey));
    const fields: (string | number)[] = [
      'flow',
      run.flow,
      'fingerprint',
      run.fingerprint,
      'status',
      'queued',
      'step',
      0,
      'attempt',
      0,
      'checkpoint',
      run.checkpoint,
      'target',
      encodeTarget(run.target),
      'createdAt',
      run.now,
      'updatedAt',
      run.now,
    ];
    if (run.forkedFrom) fields.push('forkedFrom', JSON.stringify(run.forkedFrom));
    if (run.trace !== undefined) fields.push('trace', run.trace);
    if (run.priority !== undefined) fields.push('priority', run.priority);
    const options = {
      id: run.id,
      now: String(run.now),
      changes: this.keys.changes(),
      runPrefix: this.keys.runPrefix(),
      fields: fields.length,
      ...this.valueOptions(run.values),
    };
    const staged = await this.stageValues(run.values);
    const [code, holder] = (await this.redis.createRun(
      keys.length,
      ...keys,
      JSON.stringify(options),
      ...fields,
      ...staged,
    )) as [number, string?];
    if (code !== 1) await this.dropStaged(staged);
    return code === 1 ? { created: true } : { created: false, runId: holder! };
  }

  async discard(runId: string): Promise<void> {
    const options = { runId, now: String(this.clock.now()), ...this.valueOptions(undefined) };
    await this.redis.discardRun(this.keys.run(runId), this.keys.runs(), JSON.stringify(options));
  }

  async load(runId: string): Promise<StoredRun | undefined> {
    const hash = await this.redis.hgetall(this.keys.run(runId));
    return hash.status ? runOfHash(runId, hash) : undefined;
  }

  async position(runId: string): Promise<{ status: RunStatus; step: number } | undefined> {
    const [status, step] = await this.redis.hmget(this.keys.run(runId), 'status', 'step');
    return status ? { status: status as RunStatus, step: Number(step ?? 0) } : undefined;
  }

  async loadForStep(runId: string, runnable: readonly Runnable[], wake?: number): Promise<LoadedRun | undefined> {
    const [flat, flatReserved] = (await this.redis.loadRun(
      this.keys.run(runId),
      this.keys.reserved(runId),
      this.clock.now(),
      wake === undefined ? '' : wake,
      this.keys.mailboxPrefix(),
      ...runnable.flat(),
    )) as [string[], string[]];
    const hash = hashOfList(flat);
    if (!hash.status) return undefined;
    const run = runOfHash(runId, hash);
    if (wake === undefined || flatReserved.length === 0) return run;
    const reserved = new Map<number, Message>();
    for (const [field, value] of Object.entries(hashOfList(flatReserved)))
      if (field.startsWith('m')) reserved.set(Number(field.slice(1)), decodeMessage(value));
    return { ...run, reserved };
  }

  async commit(at: StoredRun, mode: CommitMode, fields: CommitFields, report?: ChildReport): Promise<CommitReply> {
    const keys = report
      ? [...this.keys.runKeys(at.id), ...this.keys.runKeys(report.parent.id)]
      : this.keys.runKeys(at.id);
    const records = fields.errorRecords ?? [];
    const last = records[records.length - 1];
    const outcome = report && (report.outcome ?? childOutcomeOf(mode, fields));
    const options = {
      ...this.common(at.id, fields.now),
      at: positionOf(at),
      mode,
      ...(fields.stepStartedAt === undefined ? {} : { stepStartedAt: fields.stepStartedAt }),
      ...(fields.retryAt === undefined ? {} : { retryAt: fields.retryAt }),
      ...(fields.throttledBy === undefined ? {} : { throttledBy: fields.throttledBy }),
      ...(fields.target ? { target: encodeTarget(fields.target) } : {}),
      errors: records.map(encodeErrorRecord),
      ...(mode === 'failed' && last?.attempt !== undefined ? { lastAttempt: last.attempt } : {}),
      ...(fields.runError ? { runError: encodeRunError(fields.runError) } : {}),
      ...(fields.lastAction !== undefined ? { lastAction: fields.lastAction } : {}),
      conflicts: (fields.conflicts ?? []).map(encodeConflict),
      outbox: outboxOf(fields.outbox),
      ...(report
        ? {
            parent: {
              id: report.parent.id,
              step: report.parent.step,
              index: report.parent.index,
              ...(outcome?.status === 'failed' ? { errorRecord: encodeErrorRecord(outcome.error) } : {}),
              failFast: report.failFast,
              // Read only should the child's failure fail the parent.
              ...(outcome?.status === 'completed' ? {} : { parentError: encodeRunError(report.parentError) }),
              ...(report.values?.length ? { values: report.values } : {}),
              ...(report.take ? { take: true } : {}),
            },
          }
        : {}),
      ...this.valueOptions(fields.values),
      ...(fields.takenBy === undefined ? {} : { takenKey: this.keys.taken(fields.takenBy) }),
    };
    const staged = await this.stageValues(fields.values);
    const [code, parentCode, first, count, wakes, taken, child] = (await this.redis.commitStep(
      keys.length,
      ...keys,
      JSON.stringify(options),
      fields.checkpoint ?? '',
      fields.record ?? '',
      outcome ? encodeOutcome(outcome) : '',
      ...staged,
    )) as [number, number, number, number, string[], string | null | undefined, (string | number)[] | null | undefined];
    if (code !== 1) await this.dropStaged(staged);
    let parent = report && parentCode !== -1 ? childEndedResult(parentCode, first, count) : undefined;
    if (parent?.type === 'recorded' && child) {
      // The child this end started, made for this worker to take (ChildEndReport.take).
      parent = {
        ...parent,
        made: runOfHash(childRunId(report!.parent.id, report!.parent.step, first), hashOfList(child.map(String))),
      };
    }
    return {
      result: COMMIT_CODES[code] ?? 'stale',
      wakes,
      ...(parent ? { parent } : {}),
      ...(taken ? { taken } : {}),
    };
  }

  async stageInputs(runId: string, step: number, firstIndex: number, inputs: readonly string[]): Promise<void> {
    if (inputs.length === 0) return;
    const key = this.keys.inputs(runId, step);
    const fields: (string | number)[] = [];
    inputs.forEach((input, i) => fields.push(firstIndex + i, input));
    // Until the fan-out commits (which keeps them), staged inputs expire: a commit that never
    // lands leaves nothing behind.
    await this.redis
      .multi()
      .hset(key, ...fields)
      .expire(key, this.options.retentionSeconds)
      .exec();
  }

  async fanOut(at: StoredRun, fields: FanOutCommit): Promise<{ result: CommitResult; wakes: string[] }> {
    const options = {
      ...this.common(at.id, fields.now),
      at: positionOf(at),
      total: fields.total,
      startNow: fields.startNow,
      window: fields.window,
      refill: fields.refill,
      kind: fields.request.kind,
      flow: at.flow,
      fingerprint: at.fingerprint,
      ...(fields.childTarget ? { childTarget: encodeTarget(fields.childTarget) } : {}),
      outbox: outboxOf(fields.outbox),
      ...this.valueOptions(fields.values),
    };
    const staged = await this.stageValues(fields.values);
    const [code, wakes] = (await this.redis.fanOut(
      ...this.keys.runKeys(at.id),
      this.keys.inputs(at.id, at.step + 1),
      JSON.stringify(options),
      fields.checkpoint,
      encodeTarget(fields.target),
      encodeRequest(fields.request),
      fields.snapshot,
      fields.record ?? '',
      ...staged,
    )) as [number, string[]];
    if (code !== 1) await this.dropStaged(staged);
    return { result: COMMIT_CODES[code] ?? 'stale', wakes };
  }

  async createChildren(parentId: string, parentStep: number, indices: readonly number[]): Promise<StoredRun[]> {
    if (indices.length === 0) return [];
    const options = {
      runPrefix: this.keys.runPrefix(),
      parentId,
      parentStep,
      now: String(this.clock.now()),
      indices,
    };
    const made = (await this.redis.createChildren(
      this.keys.fanOut(parentId),
      this.keys.inputs(parentId, parentStep),
      JSON.stringify(options),
    )) as [number, (string | number)[]][];
    return made.map(([index, fields]) =>
      runOfHash(childRunId(parentId, parentStep, index), hashOfList(fields.map(String))),
    );
  }

  async childEnded(
    parentId: string,
    parentStep: number,
    index: number,
    report: ChildEndReport,
  ): Promise<ChildEndedResult> {
    const outcome: ChildOutcome = report.outcome ?? { status: 'cancelled' };
    const options = {
      ...this.common(parentId, report.now),
      parentId,
      parentStep: String(parentStep),
      index: String(index),
      outcome: encodeOutcome(outcome),
      ok: outcome.status === 'completed' ? '1' : '0',
      failFast: report.failFast ? '1' : '0',
      parentError: encodeRunError(report.parentError),
      errorRecord: outcome.status === 'failed' ? encodeErrorRecord(outcome.error) : '',
      ...(report.values?.length ? { values: report.values } : {}),
      ...(report.take ? { take: true } : {}),
    };
    const [code, first, count] = (await this.redis.childEnded(
      ...this.keys.runKeys(parentId),
      JSON.stringify(options),
    )) as [number, number, number];
    return childEndedResult(code, first, count);
  }

  async cancel(runId: string): Promise<{ result: CancelResult; wakes: string[] }> {
    const options = this.common(runId, this.clock.now());
    const [code, wakes] = (await this.redis.cancelRun(...this.keys.runKeys(runId), JSON.stringify(options))) as [
      number,
      string[],
    ];
    return { result: CANCEL_CODES[code] ?? 'missing', wakes };
  }

  async reopen(runId: string): Promise<ReopenReply> {
    const options = {
      runId,
      now: String(this.clock.now()),
      changes: this.keys.changes(),
      expiries: this.keys.runsExpiries(),
      ...this.valueOptions(undefined),
    };
    const [code, status, indices] = (await this.redis.reopenRun(
      ...this.keys.runKeys(runId),
      JSON.stringify(options),
    )) as [number, string, number[]];
    if (code === -1) return { result: 'missing' };
    if (code === 2) return { result: 'completed' };
    if (code === 0) return { result: 'not-ended', status: status as RunStatus };
    const run = await this.load(runId);
    if (!run) return { result: 'missing' }; // deleted in between
    return { result: 'reopened', run, reopenedChildren: indices };
  }

  async history(runId: string): Promise<string[] | undefined> {
    const [exists, records] = await Promise.all([
      this.redis.exists(this.keys.run(runId)),
      this.redis.lrange(this.keys.history(runId), 0, -1),
    ]);
    return exists ? records : undefined;
  }

  async appendErrors(runId: string, records: ErrorRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.redis
      .multi()
      .rpush(this.keys.errors(runId), ...records.map(encodeErrorRecord))
      .ltrim(this.keys.errors(runId), -this.options.maxErrors, -1)
      .exec();
  }

  async noteRefusal(runId: string, message: string): Promise<void> {
    await this.redis.hset(this.keys.run(runId), 'refusal', message);
  }

  async reserveMessage(at: StoredRun, ordinal: number, address: string): Promise<Message | undefined | 'stale'> {
    const [code, message] = (await this.redis.reserveMessage(
      this.keys.run(at.id),
      this.keys.reserved(at.id),
      this.keys.mailbox(address),
      positionOf(at),
      ordinal,
      address,
    )) as [number, string?];
    if (code === -1) return 'stale';
    return code === 1 ? decodeMessage(message!) : undefined;
  }

  async park(
    at: StoredRun,
    park: ParkRequest,
    replay: StepReplay,
    outbox: OutgoingMessage[],
    takenBy?: string,
  ): Promise<ParkReply> {
    const options = {
      ...this.common(at.id, this.clock.now()),
      at: positionOf(at),
      replay: encodeReplay(replay),
      address: park.address,
      outbox: outboxOf(outbox),
      ...(takenBy === undefined ? {} : { takenKey: this.keys.taken(takenBy) }),
    };
    const [code, parkCount, ready, wakes, taken] = (await this.redis.parkRun(
      ...this.keys.runKeys(at.id),
      JSON.stringify(options),
    )) as [number, number, number, string[], string | null | undefined];
    return { result: COMMIT_CODES[code] ?? 'stale', parkCount, ready: ready === 1, wakes, ...(taken ? { taken } : {}) };
  }

  async send(address: string, message: Message): Promise<{ wakes: string[] }> {
    const wakes = (await this.redis.sendMessage(
      this.keys.mailbox(address),
      this.keys.mailboxWaiters(address),
      encodeMessage(message),
      this.options.retentionSeconds,
    )) as string[];
    return { wakes };
  }

  async mailboxSize(address: string): Promise<number> {
    return this.redis.llen(this.keys.mailbox(address));
  }

  async takeMessage(address: string, messageId: string): Promise<Message | 'no-reply-to' | undefined> {
    const [code, message] = (await this.redis.takeMessage(this.keys.mailbox(address), messageId)) as [number, string?];
    if (code === 2) return 'no-reply-to';
    return code === 1 ? decodeMessage(message!) : undefined;
  }

  async mailboxes(messages: number): Promise<StoredMailbox[]> {
    const addresses = new Set<string>();
    for (const prefix of [this.keys.mailboxPrefix(), this.keys.waitersPrefix()]) {
      for await (const keys of scanKeys(this.redis, `${escapeGlob(prefix)}*`, 500)) {
        for (const key of keys) addresses.add(key.slice(prefix.length));
      }
    }
    const sorted = [...addresses].sort();
    const pipeline = this.redis.pipeline();
    for (const address of sorted) {
      pipeline.llen(this.keys.mailbox(address));
      pipeline.lrange(this.keys.mailbox(address), 0, messages - 1);
      pipeline.smembers(this.keys.mailboxWaiters(address));
    }
    const replies = (await pipeline.exec()) ?? [];
    return sorted.map((address, i) => ({
      address,
      size: Number(replies[3 * i]?.[1] ?? 0),
      messages: messages === 0 ? [] : ((replies[3 * i + 1]?.[1] ?? []) as string[]).map(decodeMessage),
      waiters: (replies[3 * i + 2]?.[1] ?? []) as string[],
    }));
  }

  async heartbeat(worker: WorkerBeat): Promise<void> {
    await this.redis.workerRegistry(this.keys.workers(), this.keys.workersSeen(), 'beat', JSON.stringify(worker));
  }

  async workers(lapseMs: number): Promise<StoredWorker[]> {
    return this.registry('live', lapseMs);
  }

  async claimLapsed(lapseMs: number): Promise<StoredWorker[]> {
    return this.registry('claim', lapseMs);
  }

  async removeWorker(id: string): Promise<void> {
    await this.redis.workerRegistry(this.keys.workers(), this.keys.workersSeen(), 'remove', id);
  }

  async releaseTaken(worker: string, wakeIds: readonly string[]): Promise<void> {
    if (wakeIds.length > 0) await this.redis.srem(this.keys.taken(worker), ...wakeIds);
  }

  async claimTaken(worker: string): Promise<string[]> {
    const key = this.keys.taken(worker);
    const [[, taken]] = (await this.redis.multi().smembers(key).del(key).exec()) as [[unknown, string[]]];
    return taken;
  }

  private async registry(op: 'live' | 'claim', lapseMs: number): Promise<StoredWorker[]> {
    const lapse = Number.isFinite(lapseMs) ? Math.round(lapseMs) : 1e15;
    const found = (await this.redis.workerRegistry(
      this.keys.workers(),
      this.keys.workersSeen(),
      op,
      lapse,
    )) as string[];
    return found.map((json) => JSON.parse(json) as StoredWorker);
  }

  async fanOutOf(parentId: string): Promise<StoredFanOut | undefined> {
    const [[request, total, started, ended, failed, step, childTarget], [flow, fingerprint]] = await Promise.all([
      this.redis.hmget(
        this.keys.fanOut(parentId),
        'request',
        'total',
        'started',
        'ended',
        'failed',
        'step',
        'childTarget',
      ),
      this.redis.hmget(this.keys.run(parentId), 'flow', 'fingerprint'),
    ]);
    if (!request) return undefined;
    return {
      request: decodeRequest(request),
      total: Number(total),
      started: Number(started),
      ended: Number(ended),
      failed: Number(failed),
      step: Number(step),
      flow: flow ?? '',
      fingerprint: fingerprint ?? '',
      ...(childTarget ? { childTarget: decodeTarget(childTarget) } : {}),
    };
  }

  async snapshotOf(parentId: string): Promise<string | undefined> {
    return (await this.redis.hget(this.keys.fanOut(parentId), 'snapshot')) ?? undefined;
  }

  async itemOf(parentId: string, step: number, index: number): Promise<Json | undefined> {
    const item = await this.redis.hget(this.keys.inputs(parentId, step), String(index));
    return item === null ? undefined : decodeJson(item);
  }

  /**
   * Read with HSCAN, a bounded page at a time: one HGETALL of a 1,000,000-item fan-out's outcomes
   * would hold Redis for a second and build a reply of tens of MiB in its memory.
   */
  async outcomesOf(parentId: string, total: number): Promise<(ChildOutcome | undefined)[]> {
    const key = this.keys.outcomes(parentId);
    const outcomes = new Array<ChildOutcome | undefined>(total);
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(key, cursor, 'COUNT', OUTCOMES_PAGE);
      for (let i = 0; i < flat.length; i += 2) outcomes[Number(flat[i])] = decodeOutcome(flat[i + 1]!);
      cursor = next;
    } while (cursor !== '0');
    return outcomes;
  }

  async record(runId: string): Promise<RunRecord | undefined> {
    const [hash, errors, conflicts, fanOut] = await Promise.all([
      this.redis.hgetall(this.keys.run(runId)),
      this.redis.lrange(this.keys.errors(runId), 0, -1),
      this.redis.lrange(this.keys.conflicts(runId), 0, -1),
      this.redis.hmget(this.keys.fanOut(runId), 'total', 'ended', 'failed', 'step'),
    ]);
    if (!hash.status) return undefined;
    const current = fanOut[0] !== null && fanOut[3] === hash.step; // a fan-out of an earlier step has ended
    return {
      run: runOfHash(runId, hash),
      errors: errors.map(decodeErrorRecord),
      conflicts: conflicts.map(decodeConflict),
      ...(current
        ? { children: { total: Number(fanOut[0]), ended: Number(fanOut[1]), failed: Number(fanOut[2]) } }
        : {}),
    };
  }

  async appendStream(runId: string, write: StreamWrite): Promise<StreamAppendReply> {
    const options = {
      step: String(write.step),
      attempt: write.attempt,
      ...(write.token === undefined ? {} : { token: write.token }),
      ...(write.item === undefined ? {} : { item: write.item }),
      maxLen: this.options.maxStreamEntries ?? DEFAULT_MAX_STREAM_ENTRIES,
    };
    const [code, attempt, ids] = (await this.redis.appendStream(
      this.keys.run(runId),
      this.keys.stream(runId),
      JSON.stringify(options),
      ...write.entries.flatMap(({ node, at, data }) => [node, at, data]),
    )) as [number, number, string[]];
    if (code === -1) return { result: 'missing' };
    if (code === 0) return { result: 'ended' };
    return { result: 'appended', attempt, ids };
  }

  async readStream(
    runId: string,
    after: string,
    options: { count: number; blockMs?: number },
  ): Promise<StoredStreamEntry[]> {
    const key = this.keys.stream(runId);
    const read = (): Promise<RawStreamEntry[]> =>
      this.redis.xrange(key, `(${after}`, '+', 'COUNT', options.count) as Promise<RawStreamEntry[]>;
    let found = await read();
    if (found.length === 0 && options.blockMs) {
      if (this.reader) found = (await this.reader.read(key, after, options.blockMs)).slice(0, options.count);
      else {
        for (const until = Date.now() + options.blockMs; found.length === 0 && Date.now() < until;) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          found = await read();
        }
      }
    }
    return found.map(streamEntryOf);
  }

  /** Runs parked on a mailbox now: the members of every waiter set (a SCAN; for the parked-runs gauge). */
  async parkedRuns(): Promise<number> {
    let parked = 0;
    for await (const keys of scanKeys(this.redis, `${escapeGlob(this.keys.waitersPrefix())}*`, 500)) {
      const pipeline = this.redis.pipeline();
      for (const key of keys) pipeline.scard(key);
      for (const [, size] of (await pipeline.exec()) ?? []) parked += Number(size ?? 0);
    }
    return parked;
  }

  async list(options: ListRunsOptions & { limit: number }): Promise<StoredRun[]> {
    await this.trimIndex();
    const { limit } = options;
    let skip = options.offset ?? 0;
    const found: StoredRun[] = [];
    const pageSize = Math.max((limit + skip) * 2, 50);
    for (let offset = 0; found.length < limit;) {
      const ids = await this.redis.zrevrange(this.keys.runs(), offset, offset + pageSize - 1);
      if (ids.length === 0) break;
      const runs = await this.summaries(ids);
      const expired: string[] = [];
      runs.forEach((run, i) => {
        if (!run) return void expired.push(ids[i]!);
        if (options.status && run.status !== options.status) return;
        if (options.flow && run.flow !== options.flow) return;
        if (skip > 0) return void skip--;
        if (found.length < limit) found.push(run);
      });
      // An id whose record is gone without an expiry entry (written before there were any) is
      // dropped when met; the next page starts that many places earlier.
      if (expired.length > 0) await this.redis.zrem(this.keys.runs(), ...expired);
      offset += ids.length - expired.length;
    }
    return found;
  }

  /** Drops the ids of expired runs from the runs index, a batch at a time. */
  private async trimIndex(): Promise<void> {
    const batch = 1000;
    for (let round = 0; round < 100; round++) {
      const dropped = (await this.redis.trimRuns(
        this.keys.runs(),
        this.keys.runsExpiries(),
        this.clock.now(),
        batch,
      )) as number;
      if (dropped < batch) return;
    }
  }

  async summaries(runIds: readonly string[]): Promise<(StoredRun | undefined)[]> {
    if (runIds.length === 0) return [];
    const pipeline = this.redis.pipeline();
    for (const id of runIds) pipeline.hmget(this.keys.run(id), ...SUMMARY_FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    return runIds.map((id, i) => {
      const values = (replies[i]?.[1] ?? []) as (string | null)[];
      if (!values[0]) return undefined;
      const hash = Object.fromEntries(SUMMARY_FIELDS.map((field, k) => [field, values[k] ?? undefined]));
      return { ...runOfHash(id, hash), checkpoint: '' };
    });
  }

  async values(hashes: readonly string[]): Promise<(string | undefined)[]> {
    if (hashes.length === 0) return [];
    const texts = await this.redis.mget(...hashes.map((hash) => this.keys.value(hash)));
    return texts.map((text) => text ?? undefined);
  }

  /** What a script that claims or releases values reads (claimValues in run-lifecycle.lua). */
  /**
   * Stores the texts of a claim's values that may not be stored yet under staging keys, before the
   * transition that claims them, and returns the hash, staging key pairs its script takes after its
   * fixed ARGV (stagedValues in run-lifecycle.lua). A large value so never passes through a
   * script: Redis runs one script at a time, and one that copies megabytes stalls every client.
   * A transition that is refused (stale, or an idempotency key held) leaves them to
   * {@link RedisRunStore.dropStaged}; a staged text expires after `STAGED_VALUE_SECONDS` should its
   * transition never reach Redis.
   */
  private async stageValues(claim: ValueClaim | undefined): Promise<string[]> {
    const texts = Object.entries(claim?.texts ?? {});
    if (texts.length === 0) return [];
    const token = nanoid(8);
    const pipeline = this.redis.pipeline();
    const pairs: string[] = [];
    for (const [hash, text] of texts) {
      const key = this.keys.stagedValue(hash, token);
      pipeline.set(key, text, 'EX', STAGED_VALUE_SECONDS);
      pairs.push(hash, key);
    }
    await pipeline.exec();
    return pairs;
  }

  /** Deletes the staging keys of a transition that did not claim them (`pairs`: from stageValues). */
  private async dropStaged(pairs: readonly string[]): Promise<void> {
    const keys = pairs.filter((_, i) => i % 2 === 1);
    if (keys.length > 0) await this.redis.unlink(...keys);
  }

  private valueOptions(claim: ValueClaim | undefined): {
    valuePrefix: string;
    valuesSuffix: string;
    values?: string[];
  } {
    return {
      valuePrefix: this.keys.valuePrefix(),
      valuesSuffix: this.keys.valuesSuffix(),
      ...(claim?.refs.length ? { values: claim.refs } : {}),
    };
  }

  /** Options every transition script reads. */
  async acquireBudget(request: BudgetRequest): Promise<BudgetReply> {
    return this.budgets.acquire(request);
  }

  async releaseBudget(holds: readonly BudgetHold[]): Promise<{ wakes: string[] }> {
    return this.budgets.release(holds);
  }

  async spendBudget(hold: BudgetHold, units: number): Promise<void> {
    return this.budgets.spend(hold, units);
  }

  async holdBudget(keys: readonly string[], forMs: number): Promise<void> {
    return this.budgets.hold(keys, forMs);
  }

  async renewBudget(holds: readonly BudgetHold[], leaseMs: number): Promise<void> {
    return this.budgets.renew(holds, leaseMs);
  }

  async budgetWoken(key: string, waiter: string): Promise<boolean> {
    return this.budgets.woken(key, waiter);
  }

  async budgetOf(key: string, perMs: number): Promise<BudgetState> {
    return this.budgets.state(key, perMs);
  }

  private common(runId: string, now: number): Record<string, string | number> {
    return { runId, now: String(now), ...this.settings };
  }
}

function outboxOf(outbox: readonly OutgoingMessage[] | undefined): [string, string][] {
  return (outbox ?? []).map(({ address, message }) => [address, encodeMessage(message)]);
}

/** A stream entry as append-stream.lua (or finish, for the end marker) wrote it. */
function streamEntryOf([id, flat]: RawStreamEntry): StoredStreamEntry {
  const fields = hashOfList(flat);
  if (fields.end !== undefined) return { id, end: fields.end as FinalRunStatus };
  return {
    id,
    step: Number(fields.s),
    attempt: Number(fields.a),
    node: fields.n ?? '',
    at: Number(fields.t),
    data: decodeJson(fields.d ?? 'null'),
    ...(fields.i === undefined ? {} : { item: Number(fields.i) }),
  };
}

function childEndedResult(code: number, first: number, count: number): ChildEndedResult {
  switch (code) {
    case 1:
      return { type: 'recorded', start: count > 0 ? { first, count } : undefined };
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
