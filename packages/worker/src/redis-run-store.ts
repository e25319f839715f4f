import { nanoid } from 'nanoid';
import type { ErrorRecord, Json, ListRunsOptions, RunStatus } from '@queueflow/runtime';
import {
  encodeRunEvent,
  parkedEvent,
  sameParkAs,
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
  isFinal,
  taskId,
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
  type StalledTask,
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
  type BudgetKeyInfo,
  DEFAULT_MAX_STREAM_ENTRIES,
  newRunId,
  systemClock,
  type ValueClaim,
  wakeTaskOf,
  type TurnStart,
  type TurnStarted,
} from '@queueflow/runtime/kernel';
import type { FinalRunStatus, StreamRestart } from '@queueflow/runtime';
import type { Clock } from '@queueflow/runtime';
import type { Message, Received } from '@queueflow/runtime';
import { RedisBudgets } from './redis-budgets.js';
import { Partitions, countChecked, groupBy } from './partitions.js';
import type { RedisKeys } from './redis-keys.js';
import { hashOfList, newRunFields, positionOf, runOfHash } from './run-hash.js';
import { turnEndOptions, turnEndedOf, turnStartsOptions, turnsStartedOf } from './turn-scripts.js';
import { escapeGlob } from './purge-prefix.js';
import { scanKeys } from './scan-keys.js';
import type { ScriptedRedis } from './scripts.js';
import { dropStaged, stageTexts } from './staged-values.js';
import { beatWorker, readRegistry, type RegistryKeys } from './worker-registry.js';
import type { RawStreamEntry, StreamReader } from './stream-reader.js';

/** Settings of the Redis store. */
/** The mark among a transition's wakes that it handed something off (HANDED_OFF in run-lifecycle.lua). */
const HANDED_OFF = '@handoffs';

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
  'turn',
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
 * The run store in Redis (DESIGN "The run kernel"): each transition of the `RunStore`
 * contract is one Lua script (src/lua, each headed by its KEYS, ARGV and return codes), so it is
 * atomic whatever else runs; reads are plain commands. Keys come from {@link RedisKeys}.
 */
export class RedisRunStore implements RunStore {
  /** Where each key lives: the partition of each run (one, `keys` itself, unless given {@link Partitions}). */
  readonly partitions: Partitions;
  /** When {@link RedisRunStore.trimIndex} last trimmed, on the store's clock (epoch ms). */
  private trimmedAt = 0;

  constructor(
    private readonly redis: ScriptedRedis,
    keys: RedisKeys | Partitions,
    private readonly options: RedisStoreOptions,
    /** The time source of the transitions the store stamps itself (start, cancel, park). */
    private readonly clock: Clock = systemClock,
    /**
     * Where blocking stream reads wait (one connection for every follower); without one, a
     * blocking read polls every 50 ms.
     */
    private readonly reader?: StreamReader,
  ) {
    this.partitions = keys instanceof Partitions ? keys : new Partitions(keys.prefix, 1);
    this.budgets = new RedisBudgets(redis, this.partitions);
    this.settings = this.partitions.all.map((partition, index) => ({
      partition: index,
      partitions: this.partitions.count,
      handoffs: partition.handoffs(),
      cascades: partition.cascades(),
      retention: options.retentionSeconds,
      maxErrors: options.maxErrors,
      maxRecords: options.maxStepRecords,
      // Channels are not keys: every partition publishes on partition 0's, which clients follow.
      channel: this.home.events(),
      changes: this.home.changes(),
      runs: partition.runs(),
      expiries: partition.runsExpiries(),
      mailboxPrefix: partition.mailboxPrefix(),
      waitersPrefix: partition.waitersPrefix(),
      valuePrefix: partition.valuePrefix(),
      valuesSuffix: partition.valuesSuffix(),
      runPrefix: partition.runPrefix(),
    }));
    this.settingsJson = this.settings.map((settings) => JSON.stringify(settings).slice(1, -1));
  }

  /** {@link RedisRunStore.settings} as JSON members (no braces), encoded once: see optionsJson. */
  private readonly settingsJson: readonly string[];

  /** The options every transition script takes (see {@link RedisRunStore.common}), built once per partition. */
  private readonly settings: readonly Readonly<Record<string, string | number>>[];

  /** Flow control: the budgets of nodes' `limits`. */
  private readonly budgets: RedisBudgets;

  /**
   * A new run's id: with an idempotency key on a store of several partitions, one in the
   * partition of that key, so that one script checks the key and writes the run.
   */
  placeRun(run: NewRun): string {
    const key = run.idempotencyKey;
    if (key === undefined || this.partitions.count === 1) return run.id;
    const wanted = this.partitions.indexOfAddress(`idempotency:${key}`);
    let id = run.id;
    while (this.partitions.indexOf(id) !== wanted) id = newRunId();
    return id;
  }

  private keysOf(runOrTaskId: string): RedisKeys {
    return this.partitions.of(runOrTaskId);
  }

  private get home(): RedisKeys {
    return this.partitions.home;
  }

  /** Whether mailbox `address` lies in another partition than run `runId`. */
  private remote(runId: string, address: string): boolean {
    return this.partitions.count > 1 && this.partitions.indexOf(runId) !== this.partitions.indexOfAddress(address);
  }

  /**
   * Whether a transition handed something off to another partition: its script put the mark
   * `@handoffs` among its wakes (handOff in run-lifecycle.lua), taken out here.
   */
  private handedOff(wakes: string[]): boolean {
    const at = wakes.indexOf(HANDED_OFF);
    if (at === -1) return false;
    wakes.splice(at, 1);
    return true;
  }

  /**
   * Where this process recorded each wake it took (a transition's taken set is in the partition of
   * the run that took it; the woken run may be in another), for releaseTaken.
   */
  private readonly takenIn = new Map<string, RedisKeys>();

  /**
   * Takes the first of `wakes` (woken by a hand-off: takeWake in run-lifecycle.lua could not) for
   * worker `takenBy`, into the taken set of run `runId`'s partition; removes it from `wakes`.
   */
  private async take(runId: string, takenBy: string | undefined, wakes: string[]): Promise<string | undefined> {
    if (takenBy === undefined || wakes.length === 0) return undefined;
    const wake = wakes.shift()!;
    await this.redis.sadd(this.keysOf(runId).taken(takenBy), wake);
    return wake;
  }

  /**
   * Applies run `runId`'s hand-offs (run-lifecycle.lua, handOff) in the partitions of their
   * mailboxes, oldest first, a script per stretch of one partition (apply-handoffs.lua), then
   * drops them from the run's list (drop-handoffs.lua).
   *
   * @returns the wake ids of the runs woken (the caller promotes them) and of the parks that
   *   found a message waiting.
   */
  private async applyHandoffs(runId: string): Promise<{ wakes: string[]; ready: string[] }> {
    const keys = this.keysOf(runId);
    const listKey = keys.runHandoffs(runId);
    const texts = await this.redis.lrange(listKey, 0, -1);
    const wakes: string[] = [];
    const ready: string[] = [];
    if (texts.length === 0) return { wakes, ready };
    const handoffs = texts.map((text) => JSON.parse(text) as { a: string; i: string });
    for (let first = 0; first < handoffs.length;) {
      const partition = this.partitions.indexOfAddress(handoffs[first]!.a);
      let end = first + 1;
      while (end < handoffs.length && this.partitions.indexOfAddress(handoffs[end]!.a) === partition) end++;
      const target = this.partitions.all[partition]!;
      const options = {
        mailboxPrefix: target.mailboxPrefix(),
        waitersPrefix: target.waitersPrefix(),
        heldPrefix: target.heldPrefix(),
        seqPrefix: target.handoffSeqPrefix(),
        retention: this.options.retentionSeconds,
      };
      const [woken, found] = (await this.redis.applyHandoffs(
        target.mailbox(handoffs[first]!.a),
        JSON.stringify(options),
        JSON.stringify(handoffs.slice(first, end)),
      )) as [string[], string[]];
      wakes.push(...woken);
      ready.push(...found);
      first = end;
    }
    await this.redis.dropHandoffs(listKey, keys.handoffs(), runId, ...handoffs.map(({ i }) => i));
    return { wakes, ready };
  }

  /**
   * Wait cycles of asks that parked in different partitions (a cluster's): a park follows the
   * wait-for edges of its own partition only (park-run.lua). Reads every partition's edges and,
   * for each cycle of edges that still count, answers its newest ask with the chain
   * (Message.cycle), once: that ask rejects with `ASK_CYCLE`, as the park would have.
   *
   * @returns wake ids to promote: the runs of the asks answered.
   */
  async failWaitCycles(): Promise<string[]> {
    const edges = new Map<string, WaitEdge>();
    for (const keys of this.partitions.all) {
      const fields = await this.redis.hgetall(keys.agentsAsking());
      for (const [agent, encoded] of Object.entries(fields)) {
        const edge = JSON.parse(encoded) as WaitEdge;
        if (await this.stillAsking(edge)) edges.set(agent, edge);
      }
    }
    const wakes: string[] = [];
    const seen = new Set<string>();
    for (const start of edges.keys()) {
      const path: string[] = [];
      let at = start;
      while (edges.has(at) && !seen.has(at)) {
        seen.add(at);
        path.push(at);
        at = edges.get(at)!.t;
      }
      if (!path.includes(at)) continue; // no cycle, or one found from another agent
      const cycle = path.slice(path.indexOf(at)); // each asks the next, the last the first
      const newest = cycle.reduce((best, agent) => (edges.get(agent)!.at > edges.get(best)!.at ? agent : best));
      const i = cycle.indexOf(newest);
      const chain = [...cycle.slice(i + 1), ...cycle.slice(0, i + 1), cycle[(i + 1) % cycle.length]!];
      const edge = edges.get(newest)!;
      const once = this.keysOf(edge.r).cycleAnswered(edge.w);
      if ((await this.redis.set(once, '1', 'PX', CYCLE_ANSWERED_MS, 'NX')) !== 'OK') continue;
      const message = { id: `${edge.w}.cycle`, body: null, sentAt: this.clock.now(), cycle: chain };
      wakes.push(...(await this.send(edge.a, message)).wakes);
    }
    return wakes;
  }

  /** Whether a wait-for edge counts: its run parked there, no answer waiting (askCycle in run-lifecycle.lua). */
  private async stillAsking(edge: WaitEdge): Promise<boolean> {
    const [, step, parks] = /-(\d+)-p(\d+)$/.exec(edge.w) ?? [];
    const [status, atStep, parkCount] = await this.redis.hmget(
      this.keysOf(edge.r).run(edge.r),
      'status',
      'step',
      'parkCount',
    );
    if (status !== 'waiting' || atStep !== step || parkCount !== parks) return false;
    return (await this.redis.llen(this.partitions.ofAddress(edge.a).mailbox(edge.a))) === 0;
  }

  /**
   * Applies the hand-offs that have waited over `olderThanMs` (their transition's caller died
   * before applying them), in every partition, up to `limit` runs' each.
   *
   * @returns wake ids to promote: runs woken by a message, and parks that found one waiting.
   */
  async applyLateHandoffs(olderThanMs: number, limit = 100): Promise<string[]> {
    if (this.partitions.count === 1) return [];
    const before = this.clock.now() - olderThanMs;
    const woken: string[] = [];
    for (const keys of this.partitions.all) {
      for (const runId of await this.redis.zrangebyscore(keys.handoffs(), '-inf', before, 'LIMIT', 0, limit)) {
        const { wakes, ready } = await this.applyHandoffs(runId);
        woken.push(...wakes, ...ready);
      }
    }
    return woken;
  }

  /**
   * Claims the cascades due in every partition, up to `limit` each (claim-due.lua: a claimed one
   * is not due again for `olderThanMs`, so a few are claimed at a time). A placement of children
   * whose placer died (placements) becomes a cascade first when its parent has ended meanwhile: a
   * child it made may run for a parent that no longer waits.
   */
  async cascadesDue(olderThanMs: number, limit = 4): Promise<string[]> {
    const now = this.clock.now();
    const before = now - olderThanMs;
    const due = await Promise.all(
      this.partitions.all.map(async (keys) => {
        const stale = (await this.redis.claimDue(keys.placements(), before, now, limit)) as string[];
        for (const placement of stale) {
          const parentId = placement.slice(0, placement.indexOf(' '));
          const status = await this.redis.hget(keys.run(parentId), 'status');
          // A cascade of the parent still recorded may have passed the child placed: the placement
          // waits (claimed) until a cascade of its own can be recorded.
          if (
            isFinal((status ?? undefined) as RunStatus | undefined) &&
            Number(await this.redis.zadd(keys.cascades(), 'NX', 0, parentId)) === 0
          )
            continue;
          await this.redis.zrem(keys.placements(), placement);
        }
        return (await this.redis.claimDue(keys.cascades(), before, now, limit)) as string[];
      }),
    );
    return due.flat();
  }

  async cascadeProgress(parentId: string, done: boolean): Promise<boolean> {
    const key = this.keysOf(parentId).cascades();
    if (done) return (await this.redis.zrem(key, parentId)) === 1;
    // One transaction: whether the cascade is still recorded, and its time now.
    const [[, score]] = (await this.redis
      .multi()
      .zscore(key, parentId)
      .zadd(key, 'XX', this.clock.now(), parentId)
      .exec()) as [[unknown, string | null], unknown];
    return score !== null;
  }

  async create(run: NewRun): Promise<{ created: true } | { created: false; runId: string }> {
    const at = this.keysOf(run.id);
    const keys = [at.run(run.id), at.runs(), at.runsSequence(), at.settings()];
    if (run.idempotencyKey !== undefined) {
      // placeRun put the run in the partition of its idempotency key: one script checks both.
      keys.push(at.idempotency(run.idempotencyKey));
    }
    const fields = newRunFields(run);
    if (run.takenBy !== undefined) keys.push(at.taken(run.takenBy));
    const options = {
      ...(run.takenBy === undefined ? {} : { taken: firstStepTaskId(run.id), takenKey: keys.length }),
      id: run.id,
      now: String(run.now),
      changes: this.home.changes(),
      runPrefix: at.runPrefix(),
      partitions: this.partitions.count,
      fields: fields.length,
      ...this.valueOptions(run.id, run.values),
      ...(run.forkedFrom
        ? { event: encodeRunEvent({ at: run.now, step: 0, kind: 'forked', from: { ...run.forkedFrom } }) }
        : {}),
    };
    const staged = await this.stageValues(run.id, run.values, true);
    const [code, holder] = await countChecked(
      this.redis,
      this.partitions,
      this.partitions.indexOf(run.id),
      'RedisRunStore',
      async () => {
        return (await this.redis.createRun(keys.length, ...keys, JSON.stringify(options), ...fields, ...staged)) as [
          number,
          string?,
        ];
      },
    ).catch(async (error: unknown) => {
      await this.dropStaged(staged);
      throw error;
    });
    if (code !== 1) await this.dropStaged(staged);
    return code === 1 ? { created: true } : { created: false, runId: holder! };
  }

  async discard(runId: string): Promise<void> {
    const options = { runId, now: String(this.clock.now()), ...this.valueOptions(runId, undefined) };
    const at = this.keysOf(runId);
    await this.redis.discardRun(at.run(runId), at.runs(), JSON.stringify(options));
  }

  async load(runId: string): Promise<StoredRun | undefined> {
    const hash = await this.redis.hgetall(this.keysOf(runId).run(runId));
    return hash.status ? runOfHash(runId, hash) : undefined;
  }

  async position(runId: string): Promise<{ status: RunStatus; step: number } | undefined> {
    const [status, step] = await this.redis.hmget(this.keysOf(runId).run(runId), 'status', 'step');
    return status ? { status: status as RunStatus, step: Number(step ?? 0) } : undefined;
  }

  async loadForStep(
    runId: string,
    runnable: readonly Runnable[],
    wake?: number,
    worker?: string,
    stalled?: StalledTask,
  ): Promise<LoadedRun | undefined> {
    const [flat, flatReserved] = (await this.redis.loadRun(
      this.keysOf(runId).run(runId),
      this.keysOf(runId).reserved(runId),
      this.clock.now(),
      wake === undefined ? '' : wake,
      JSON.stringify({
        mailboxPrefix: this.keysOf(runId).mailboxPrefix(),
        partition: this.partitions.indexOf(runId),
        partitions: this.partitions.count,
        ...(worker === undefined ? {} : { worker }),
        ...(stalled === undefined ? {} : { stalled }),
      }),
      ...runnable.flat(),
    )) as [string[], string[]];
    return this.loadedOf(runId, flat, flatReserved, wake);
  }

  /** `{ takenRun }` of a transition's reply: the run of wake `taken` read for it (loadTaken in lua/run-lifecycle.lua). */
  private async takenRunOf(
    taken: string | null | undefined,
    reply: [string[], string[]] | null | undefined,
  ): Promise<{ takenRun?: LoadedRun }> {
    const wake = taken ? wakeTaskOf(taken) : undefined;
    if (!Array.isArray(reply) || !wake) return {};
    const run = await this.loadedOf(wake.runId, reply[0], reply[1], wake.park);
    return run ? { takenRun: run } : {};
  }

  /**
   * The run `runId` as load-run.lua (or loadTaken) read it for a step: its hash and, for a wake
   * (`wake`: the park count it ends), its reserved messages.
   */
  private async loadedOf(
    runId: string,
    flat: string[],
    flatReserved: string[],
    wake: number | undefined,
  ): Promise<LoadedRun | undefined> {
    const hash = hashOfList(flat);
    if (!hash.status) return undefined;
    const run = runOfHash(runId, hash);
    const parked = run.replay.parked;
    const woken = wake !== undefined && run.status === 'waiting' && run.parkCount === wake && parked !== undefined;
    // A receiveAny's message is reserved when the step runs again (which address is not known here).
    const preReserve = parked?.addresses === undefined && this.remote(runId, parked?.address ?? '');
    if (!woken || (flatReserved.length === 0 && !preReserve)) return run;
    const reserved = new Map<number, Message>();
    const elsewhere = new Map<number, string>(); // ordinal -> address, held in another partition
    for (const [field, value] of Object.entries(hashOfList(flatReserved))) {
      if (field.startsWith('m')) reserved.set(Number(field.slice(1)), decodeMessage(value));
      if (field.startsWith('r')) elsewhere.set(Number(field.slice(1)), value);
    }
    elsewhere.delete(parked.ordinal);
    // Messages held in other partitions for earlier receives (read only: a receive that found its
    // mailbox empty, or timed out, holds nothing and takes nothing now).
    const epoch = hash.holdEpoch ?? '0';
    for (const [ordinal, address] of elsewhere) {
      const held = await this.redis.hget(
        this.partitions.ofAddress(address).held(runId, address),
        `${epoch}:${ordinal}`,
      );
      if (held !== null) reserved.set(ordinal, decodeMessage(held));
    }
    // The parked receive's own message, held now (as reserve-message.lua would take it here).
    if (preReserve && !reserved.has(parked.ordinal)) {
      const message = await this.reserveMessage(run, parked.ordinal, parked.address);
      if (message && message !== 'stale') reserved.set(parked.ordinal, message);
    }
    return reserved.size === 0 ? run : { ...run, reserved };
  }

  async commit(at: StoredRun, mode: CommitMode, fields: CommitFields, report?: ChildReport): Promise<CommitReply> {
    if (report && this.partitions.count > 1) return this.commitApart(at, mode, fields, report);
    // A turn's end commits here only when its key is in the run's partition (one script).
    const turnEnd =
      fields.turnEnd &&
      !report &&
      this.partitions.indexOfAddress(fields.turnEnd.agent) === this.partitions.indexOf(at.id)
        ? fields.turnEnd
        : undefined;
    const keys = report
      ? [...this.keysOf(at.id).runKeys(at.id), ...this.keysOf(report.parent.id).runKeys(report.parent.id)]
      : turnEnd
        ? [...this.keysOf(at.id).runKeys(at.id), ...this.keysOf(at.id).agentKeys(turnEnd.agent)]
        : this.keysOf(at.id).runKeys(at.id);
    const records = fields.errorRecords ?? [];
    const last = records[records.length - 1];
    const outcome = report && (report.outcome ?? childOutcomeOf(mode, fields));
    // Built without the common options (optionsJson adds their text, encoded once), and without
    // empty lists: every child of a fan-out commits here, so what is left out is left out 5,000 times.
    const options = {
      at: positionOf(at),
      ...(at.replay.parked ? { woken: true } : {}), // logWoken (run-lifecycle.lua)
      mode,
      ...(fields.stepStartedAt === undefined ? {} : { stepStartedAt: fields.stepStartedAt }),
      ...(fields.retryAt === undefined ? {} : { retryAt: fields.retryAt }),
      ...(fields.throttledBy === undefined ? {} : { throttledBy: fields.throttledBy }),
      ...(fields.target ? { target: encodeTarget(fields.target) } : {}),
      ...(records.length > 0 ? { errors: records.map(encodeErrorRecord) } : {}),
      ...(mode === 'failed' && last?.attempt !== undefined ? { lastAttempt: last.attempt } : {}),
      ...(fields.runError ? { runError: encodeRunError(fields.runError) } : {}),
      ...(fields.lastAction !== undefined ? { lastAction: fields.lastAction } : {}),
      ...(fields.conflicts?.length ? { conflicts: fields.conflicts.map(encodeConflict) } : {}),
      ...(fields.outbox?.length ? { outbox: outboxOf(fields.outbox) } : {}),
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
      ...(fields.values?.refs.length ? { values: fields.values.refs } : {}), // the prefixes: in common
      ...(fields.takenBy === undefined ? {} : { takenKey: this.keysOf(at.id).taken(fields.takenBy) }),
      ...(fields.starts?.length
        ? { starts: turnStartsOptions(this.partitions, at.id, fields.starts, !fields.turnEnd || turnEnd !== undefined) }
        : {}),
      ...(turnEnd
        ? {
            turnEnd: {
              ...turnEndOptions(this.partitions, turnEnd.agent, turnEnd.end),
              agent: turnEnd.agent,
              ...(turnEnd.end.state === undefined ? {} : { state: turnEnd.end.state }),
              ...(turnEnd.end.error === undefined ? {} : { error: JSON.stringify(turnEnd.end.error) }),
            },
          }
        : {}),
    };
    const staged = await this.stageValues(at.id, fields.values);
    const [code, parentCode, first, count, wakes, taken, child, turn, takenRun, started] = (await this.redis.commitStep(
      keys.length,
      ...keys,
      this.optionsJson(at.id, fields.now, options),
      fields.checkpoint ?? '',
      fields.record ?? '',
      outcome ? encodeOutcome(outcome) : '',
      ...staged,
    )) as [
      number,
      number,
      number,
      number,
      string[],
      string | null | undefined,
      (string | number)[] | null | undefined,
      (string | number)[] | null | undefined,
      [string[], string[]] | null | undefined,
      unknown,
    ];
    if (code !== 1) await this.dropStaged(staged);
    let takenWake = taken ?? undefined;
    if (this.handedOff(wakes)) {
      const applied = await this.applyHandoffs(at.id);
      takenWake ??= await this.take(at.id, fields.takenBy, applied.wakes);
      wakes.push(...applied.wakes);
    }
    if (takenWake !== undefined && fields.takenBy !== undefined) this.takenIn.set(takenWake, this.keysOf(at.id));
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
      ...(takenWake ? { taken: takenWake } : {}),
      ...(turnEnd && Array.isArray(turn) ? { turnEnded: turnEndedOf(turn) } : {}),
      ...(await this.takenRunOf(taken, takenRun)),
      ...startedOf(started),
    };
  }

  /**
   * Commits a step of a fan-out child on a store of several partitions, where the child and its
   * parent may live apart (Partitions.indexOf) and no script may touch both: the child's end is
   * recorded in its own partition (commit-step.lua), then applied to its parent in the parent's
   * (child-ended.lua, once per child index). Should the caller die in between, the child's task
   * (its job, or its entry among the caller's taken tasks) is delivered again, finds the child
   * ended and reports it (FanOutDriver.reportEnded). The child an end starts for the caller to take
   * (ChildEndReport.take) is made next, in its own partition.
   */
  private async commitApart(
    at: StoredRun,
    mode: CommitMode,
    fields: CommitFields,
    report: ChildReport,
  ): Promise<CommitReply> {
    const reply = await this.commit(at, mode, fields);
    if (reply.result !== 'committed' || (mode !== 'completed' && mode !== 'failed')) return reply;
    const { parent: of, ...end } = report;
    const outcome = report.outcome ?? childOutcomeOf(mode, fields);
    const take = report.take === true && fields.takenBy !== undefined;
    // The next child it starts comes back with the end, to be placed in its partition at once.
    const placement = take ? this.placement(of.id) : undefined;
    const { result, given } = await this.recordChildEnd(
      of.id,
      of.step,
      of.index,
      { ...end, ...(outcome ? { outcome } : {}), take },
      placement,
    );
    let parent = result;
    if (parent.type === 'recorded' && given && placement) {
      const [made] = await this.placeChildren(of.id, of.step, given, placement, fields.takenBy);
      if (made) parent = { ...parent, made };
    }
    return { ...reply, parent };
  }

  async stageInputs(runId: string, step: number, firstIndex: number, inputs: readonly string[]): Promise<void> {
    if (inputs.length === 0) return;
    const key = this.keysOf(runId).inputs(runId, step);
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
      ...(at.replay.parked ? { woken: true } : {}), // logWoken (run-lifecycle.lua)
      total: fields.total,
      startNow: fields.startNow,
      window: fields.window,
      refill: fields.refill,
      kind: fields.request.kind,
      flow: at.flow,
      fingerprint: at.fingerprint,
      ...(fields.childTarget ? { childTarget: encodeTarget(fields.childTarget) } : {}),
      outbox: outboxOf(fields.outbox),
      ...this.valueOptions(at.id, fields.values),
    };
    const staged = await this.stageValues(at.id, fields.values);
    const [code, wakes] = (await this.redis.fanOut(
      ...this.keysOf(at.id).runKeys(at.id),
      this.keysOf(at.id).inputs(at.id, at.step + 1),
      JSON.stringify(options),
      fields.checkpoint,
      encodeTarget(fields.target),
      encodeRequest(fields.request),
      fields.snapshot,
      fields.record ?? '',
      ...staged,
    )) as [number, string[]];
    if (code !== 1) await this.dropStaged(staged);
    if (this.handedOff(wakes)) wakes.push(...(await this.applyHandoffs(at.id)).wakes);
    return { result: COMMIT_CODES[code] ?? 'stale', wakes };
  }

  /**
   * Children of the parent's partition are made in one script there (create-children.lua), which
   * also reads the inputs of the others; those are made in their partitions
   * ({@link RedisRunStore.placeChildren}).
   */
  async createChildren(parentId: string, parentStep: number, indices: readonly number[]): Promise<StoredRun[]> {
    if (indices.length === 0) return [];
    const parentKeys = this.keysOf(parentId);
    const home = this.partitions.indexOf(parentId);
    const partitionOf = (index: number): number => this.partitions.indexOf(childRunId(parentId, parentStep, index));
    const elsewhere = indices.filter((index) => partitionOf(index) !== home);
    // Recorded only for children made elsewhere (a store of one partition has none).
    const placement = elsewhere.length > 0 ? this.placement(parentId) : undefined;
    const options = {
      runPrefix: parentKeys.runPrefix(),
      parentId,
      parentStep,
      now: placement?.now ?? String(this.clock.now()),
      indices: elsewhere.length > 0 ? indices.filter((index) => partitionOf(index) === home) : indices,
      elsewhere,
      ...placement,
    };
    const [made, given] = (await this.redis.createChildren(
      parentKeys.fanOut(parentId),
      parentKeys.inputs(parentId, parentStep),
      JSON.stringify(options),
    )) as [MadeChild[], GivenChildren | []];
    const runs = made.map((child) => childRecord(childRunId(parentId, parentStep, Number(child[0])), child));
    if (given.length === 0 || !placement) return runs;
    return [...runs, ...(await this.placeChildren(parentId, parentStep, given, placement))];
  }

  /** A placement of children under way (giveChildren in run-lifecycle.lua; RedisKeys.placements). */
  private placement(parentId: string): { placements: string; placement: string; now: string } {
    return {
      placements: this.keysOf(parentId).placements(),
      placement: `${parentId} ${nanoid(8)}`,
      now: String(this.clock.now()),
    };
  }

  /**
   * Makes, in their partitions, the records of children whose inputs their parent's partition gave
   * (place-children.lua, one script per partition), then checks that the parent still waits on
   * them: a child made while its parent ended (cancelled, failed fast: its cascade found no record
   * to cancel) is cancelled here. Should this process die before that check, the placement it
   * leaves recorded makes a worker look (RedisRunStore.cascadesDue).
   *
   * @returns the records made (none when the parent no longer waits).
   */
  private async placeChildren(
    parentId: string,
    parentStep: number,
    [flow, fingerprint, childTarget, priority, inputs]: GivenChildren,
    { placements, placement, now }: { placements: string; placement: string; now: string },
    takenBy?: string,
  ): Promise<StoredRun[]> {
    const idOf = (index: number | string): string => childRunId(parentId, parentStep, Number(index));
    const pairs = Array.from({ length: inputs.length / 2 }, (_, i) => [inputs[2 * i]!, inputs[2 * i + 1]!] as const);
    const placed = await Promise.all(
      [...groupBy(pairs, ([index]) => this.partitions.indexOf(idOf(index)))].map(async ([partition, group]) => {
        const keys = this.partitions.all[partition]!;
        const options = {
          runPrefix: keys.runPrefix(),
          parentId,
          parentStep,
          now,
          flow,
          fingerprint,
          childTarget,
          priority,
          ...(takenBy === undefined ? {} : { takenKey: keys.taken(takenBy) }),
        };
        const children = (await this.redis.placeChildren(
          keys.run(idOf(group[0]![0])),
          JSON.stringify(options),
          ...group.flat(),
        )) as MadeChild[];
        return children.map((child) => childRecord(idOf(child[0]), child));
      }),
    );
    const made = placed.flat();
    const parentKeys = this.keysOf(parentId);
    // One round trip: how the parent stands, and the placement done (it is checked here).
    const [[, status], [, step]] = (await this.redis
      .multi()
      .hget(parentKeys.run(parentId), 'status')
      .hget(parentKeys.fanOut(parentId), 'step')
      .zrem(placements, placement)
      .exec()) as [[unknown, string | null], [unknown, string | null], unknown];
    if (status === 'waiting' && step === String(parentStep)) return made;
    if (made.length > 0) {
      await Promise.all(made.map((child) => this.cancel(child.id)));
      if (takenBy !== undefined) await this.releaseTaken(takenBy, [`${made[0]!.id}-0`]);
    }
    return [];
  }

  async childEnded(
    parentId: string,
    parentStep: number,
    index: number,
    report: ChildEndReport,
  ): Promise<ChildEndedResult> {
    return (await this.recordChildEnd(parentId, parentStep, index, report)).result;
  }

  /**
   * Records a child's end on its parent (child-ended.lua). With `placement`, the first child the
   * end starts is given, to be placed by the caller (the end of a child that lives apart from its
   * parent, whose worker takes the next child: RedisRunStore.commitApart).
   */
  private async recordChildEnd(
    parentId: string,
    parentStep: number,
    index: number,
    report: ChildEndReport,
    placement?: { placements: string; placement: string },
  ): Promise<{ result: ChildEndedResult; given?: GivenChildren }> {
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
      ...(placement ? { give: true, placements: placement.placements, placement: placement.placement } : {}),
    };
    // The child claimed them in its own partition: the parent's gets copies (a value's copies
    // are per partition; see RedisRunStore.values).
    const staged =
      report.values?.length && this.partitions.count > 1
        ? await this.stageValues(parentId, { refs: report.values, texts: {} }, true)
        : [];
    const [code, first, count, given] = (await this.redis.childEnded(
      ...this.keysOf(parentId).runKeys(parentId),
      JSON.stringify(options),
      ...staged,
    )) as [number, number, number, GivenChildren?];
    await this.dropStaged(staged); // those not claimed (a duplicate end); the others were renamed
    return { result: childEndedResult(code, first, count), ...(given ? { given } : {}) };
  }

  async cancel(runId: string, by?: string): Promise<{ result: CancelResult; wakes: string[] }> {
    const options = { ...this.common(runId, this.clock.now()), ...(by === undefined ? {} : { by }) };
    const [code, wakes] = (await this.redis.cancelRun(
      ...this.keysOf(runId).runKeys(runId),
      JSON.stringify(options),
    )) as [number, string[]];
    if (this.handedOff(wakes)) wakes.push(...(await this.applyHandoffs(runId)).wakes);
    return { result: CANCEL_CODES[code] ?? 'missing', wakes };
  }

  async reopen(runId: string): Promise<ReopenReply> {
    const options = {
      runId,
      now: String(this.clock.now()),
      changes: this.home.changes(),
      expiries: this.keysOf(runId).runsExpiries(),
      cascades: this.keysOf(runId).cascades(),
      ...this.valueOptions(runId, undefined),
    };
    const [code, status, indices] = (await this.redis.reopenRun(
      ...this.keysOf(runId).runKeys(runId),
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
      this.redis.exists(this.keysOf(runId).run(runId)),
      this.redis.lrange(this.keysOf(runId).history(runId), 0, -1),
    ]);
    return exists ? records : undefined;
  }

  async events(runId: string): Promise<string[] | undefined> {
    const [exists, events] = await Promise.all([
      this.redis.exists(this.keysOf(runId).run(runId)),
      this.redis.lrange(this.keysOf(runId).runEvents(runId), 0, -1),
    ]);
    return exists ? events : undefined;
  }

  async noteTakeover(runId: string, from: string): Promise<void> {
    await this.redis.noteTakeover(this.keysOf(runId).run(runId), from);
  }

  async appendErrors(runId: string, records: ErrorRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.redis
      .multi()
      .rpush(this.keysOf(runId).errors(runId), ...records.map(encodeErrorRecord))
      .ltrim(this.keysOf(runId).errors(runId), -this.options.maxErrors, -1)
      .exec();
  }

  async noteRefusal(runId: string, message: string): Promise<void> {
    await this.redis.hset(this.keysOf(runId).run(runId), 'refusal', message);
  }

  async reserveMessage(at: StoredRun, ordinal: number, address: string): Promise<Message | undefined | 'stale'> {
    const received = await this.reserveAt(at, ordinal, address);
    return received === 'stale' ? received : received?.message;
  }

  async reserveAnyMessage(
    at: StoredRun,
    ordinal: number,
    addresses: readonly string[],
  ): Promise<Received | undefined | 'stale'> {
    for (const address of addresses) {
      const received = await this.reserveAt(at, ordinal, address, true);
      if (received !== undefined) return received;
    }
    return undefined;
  }

  /**
   * Reserves for receive `ordinal` what was reserved for it before (whichever address it came
   * from), else the head of `address` (reserve-message.lua). `any` (a receiveAny, which asks its
   * addresses in turn): a remote reservation whose mailbox proves empty is dropped, so that the
   * next address can be asked; an earlier reservation elsewhere that proves empty is dropped
   * too, and `address` is asked again.
   */
  private async reserveAt(
    at: StoredRun,
    ordinal: number,
    address: string,
    any = false,
  ): Promise<Received | undefined | 'stale'> {
    const keys = this.keysOf(at.id);
    const remote = this.remote(at.id, address);
    const [code, reply, heldAt] = (await this.redis.reserveMessage(
      keys.run(at.id),
      keys.reserved(at.id),
      remote ? keys.reserved(at.id) : keys.mailbox(address),
      positionOf(at),
      ordinal,
      address,
      remote ? 'remote' : '',
    )) as [number, string?, string?];
    if (code === -1) return 'stale';
    if (code === 1) return { address: heldAt ?? address, message: decodeMessage(reply!) };
    if (code !== 2) return undefined;
    // Recorded in the run's partition: now held in the mailbox's (hold-message.lua).
    const holdAt = heldAt ?? address;
    const mailbox = this.partitions.ofAddress(holdAt);
    const held = (await this.redis.holdMessage(
      mailbox.held(at.id, holdAt),
      mailbox.mailbox(holdAt),
      reply!,
      ordinal,
      this.options.retentionSeconds,
    )) as string | null;
    if (held) return { address: holdAt, message: decodeMessage(held) };
    if (!any) return undefined;
    await this.redis.reserveMessage(
      keys.run(at.id),
      keys.reserved(at.id),
      keys.reserved(at.id),
      positionOf(at),
      ordinal,
      holdAt,
      'forget',
    );
    return holdAt === address ? undefined : this.reserveAt(at, ordinal, address, any);
  }

  async park(
    at: StoredRun,
    park: ParkRequest,
    replay: StepReplay,
    outbox: OutgoingMessage[],
    takenBy?: string,
    starts?: TurnStart[],
  ): Promise<ParkReply> {
    const now = this.clock.now();
    // A re-check that found nothing and parks again on the same call is no new park (no wake).
    const again = sameParkAs(at.replay.parked, park);
    const options = {
      ...this.common(at.id, now),
      at: positionOf(at),
      ...(at.replay.parked && !again ? { woken: true } : {}),
      ...(again ? {} : { event: encodeRunEvent(parkedEvent(at.step, park, now)) }),
      replay: encodeReplay(replay),
      address: park.address,
      ...(park.addresses === undefined ? {} : { addresses: park.addresses }),
      ...(park.ask === undefined ? {} : { ask: park.ask }),
      outbox: outboxOf(outbox),
      ...(takenBy === undefined ? {} : { takenKey: this.keysOf(at.id).taken(takenBy) }),
      ...(starts?.length ? { starts: turnStartsOptions(this.partitions, at.id, starts) } : {}),
    };
    const [code, parkCount, ready, wakes, taken, takenRun, started] = (await this.redis.parkRun(
      ...this.keysOf(at.id).runKeys(at.id),
      JSON.stringify(options),
    )) as [
      number,
      number,
      number,
      string[],
      string | null | undefined,
      [string[], string[]] | null | undefined,
      unknown,
    ];
    let waiting = ready === 1;
    let takenWake = taken ?? undefined;
    if (this.handedOff(wakes)) {
      const applied = await this.applyHandoffs(at.id);
      takenWake ??= await this.take(at.id, takenBy, applied.wakes);
      wakes.push(...applied.wakes);
      waiting ||= applied.ready.includes(`${at.id}-${at.step}-p${parkCount}`);
    }
    if (takenWake !== undefined && takenBy !== undefined) this.takenIn.set(takenWake, this.keysOf(at.id));
    return {
      result: COMMIT_CODES[code] ?? 'stale',
      parkCount,
      ready: waiting,
      wakes,
      ...(takenWake ? { taken: takenWake } : {}),
      ...(await this.takenRunOf(taken, takenRun)),
      ...startedOf(started),
    };
  }

  async send(address: string, message: Message): Promise<{ wakes: string[] }> {
    const index = this.partitions.indexOfAddress(address);
    const keys = this.partitions.all[index]!;
    const encoded = encodeMessage(message);
    const [, ...wakes] = await countChecked(
      this.redis,
      this.partitions,
      index,
      'RedisRunStore',
      async () =>
        (await this.redis.sendMessage(
          keys.mailbox(address),
          keys.mailboxWaiters(address),
          keys.settings(),
          encoded,
          this.options.retentionSeconds,
          this.partitions.count,
          address,
          message.sentAt,
        )) as [number, ...string[]],
    );
    return { wakes };
  }

  async mailboxSize(address: string): Promise<number> {
    return this.redis.llen(this.partitions.ofAddress(address).mailbox(address));
  }

  async takeMessage(address: string, messageId: string): Promise<Message | 'no-reply-to' | undefined> {
    const [code, message] = (await this.redis.takeMessage(
      this.partitions.ofAddress(address).mailbox(address),
      messageId,
    )) as [number, string?];
    if (code === 2) return 'no-reply-to';
    return code === 1 ? decodeMessage(message!) : undefined;
  }

  async mailboxes(messages: number): Promise<StoredMailbox[]> {
    const addresses = new Set<string>();
    for (const partition of this.partitions.all) {
      for (const prefix of [partition.mailboxPrefix(), partition.waitersPrefix()]) {
        for await (const keys of scanKeys(this.redis, `${escapeGlob(prefix)}*`, 500)) {
          for (const key of keys) addresses.add(key.slice(prefix.length));
        }
      }
    }
    const sorted = [...addresses].sort();
    const found = new Map<string, StoredMailbox>();
    // One pipeline per partition: a cluster takes a pipeline only within one slot's node.
    await Promise.all(
      [...groupBy(sorted, (address) => this.partitions.indexOfAddress(address))].map(async ([partition, group]) => {
        const keys = this.partitions.all[partition]!;
        const pipeline = this.redis.pipeline();
        for (const address of group) {
          pipeline.llen(keys.mailbox(address));
          pipeline.lrange(keys.mailbox(address), 0, messages - 1);
          pipeline.smembers(keys.mailboxWaiters(address));
        }
        const replies = (await pipeline.exec()) ?? [];
        group.forEach((address, i) =>
          found.set(address, {
            address,
            size: Number(replies[3 * i]?.[1] ?? 0),
            messages: messages === 0 ? [] : ((replies[3 * i + 1]?.[1] ?? []) as string[]).map(decodeMessage),
            waiters: (replies[3 * i + 2]?.[1] ?? []) as string[],
          }),
        );
      }),
    );
    return sorted.map((address) => found.get(address)!);
  }

  async heartbeat(worker: WorkerBeat, join = false): Promise<'alive' | 'fenced'> {
    return beatWorker(this.redis, this.registryKeys(), worker, join);
  }

  async workers(lapseMs: number): Promise<StoredWorker[]> {
    return readRegistry(this.redis, this.registryKeys(), 'live', lapseMs);
  }

  async claimLapsed(lapseMs: number): Promise<StoredWorker[]> {
    return readRegistry(this.redis, this.registryKeys(), 'claim', lapseMs);
  }

  /** The worker registry's keys (partition 0). */
  registryKeys(): RegistryKeys {
    return { workers: this.home.workers(), seen: this.home.workersSeen() };
  }

  async removeWorker(id: string): Promise<void> {
    await this.redis.workerRegistry(this.home.workers(), this.home.workersSeen(), 'remove', id);
  }

  async releaseTaken(worker: string, wakeIds: readonly string[]): Promise<void> {
    // Each task is in a taken set of its own partition (a child's first step is taken where the
    // child is made; a wake of a mailbox of the run's partition, by its run's transition), or of
    // the partition takenIn says (a wake a hand-off woke, taken here).
    const byPartition = groupBy(wakeIds, (id) => this.takenIn.get(id) ?? this.keysOf(id));
    for (const id of wakeIds) this.takenIn.delete(id);
    await Promise.all([...byPartition].map(([keys, ids]) => this.redis.srem(keys.taken(worker), ...ids)));
  }

  async claimTaken(worker: string): Promise<string[]> {
    const claimed = await Promise.all(
      this.partitions.all.map(async (keys) => {
        const key = keys.taken(worker);
        const [[, taken]] = (await this.redis.multi().smembers(key).del(key).exec()) as [[unknown, string[]]];
        return taken;
      }),
    );
    return claimed.flat();
  }

  async fanOutOf(parentId: string): Promise<StoredFanOut | undefined> {
    const [[request, total, started, ended, failed, step, childTarget], [flow, fingerprint]] = await Promise.all([
      this.redis.hmget(
        this.keysOf(parentId).fanOut(parentId),
        'request',
        'total',
        'started',
        'ended',
        'failed',
        'step',
        'childTarget',
      ),
      this.redis.hmget(this.keysOf(parentId).run(parentId), 'flow', 'fingerprint'),
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
    return (await this.redis.hget(this.keysOf(parentId).fanOut(parentId), 'snapshot')) ?? undefined;
  }

  async itemOf(parentId: string, step: number, index: number): Promise<Json | undefined> {
    const item = await this.redis.hget(this.keysOf(parentId).inputs(parentId, step), String(index));
    return item === null ? undefined : decodeJson(item);
  }

  /**
   * Read with HSCAN, a bounded page at a time: one HGETALL of a 1,000,000-item fan-out's outcomes
   * would hold Redis for a second and build a reply of tens of MiB in its memory.
   */
  async outcomesOf(parentId: string, total: number): Promise<(ChildOutcome | undefined)[]> {
    const key = this.keysOf(parentId).outcomes(parentId);
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
      this.redis.hgetall(this.keysOf(runId).run(runId)),
      this.redis.lrange(this.keysOf(runId).errors(runId), 0, -1),
      this.redis.lrange(this.keysOf(runId).conflicts(runId), 0, -1),
      this.redis.hmget(this.keysOf(runId).fanOut(runId), 'total', 'ended', 'failed', 'step'),
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
      ...(write.worker === undefined ? {} : { worker: write.worker }),
      ...(write.node === undefined ? {} : { node: write.node }),
      ...(write.at === undefined ? {} : { at: write.at }),
      maxLen: this.options.maxStreamEntries ?? DEFAULT_MAX_STREAM_ENTRIES,
    };
    const [code, attempt, ids] = (await this.redis.appendStream(
      this.keysOf(runId).run(runId),
      this.keysOf(runId).stream(runId),
      JSON.stringify(options),
      ...write.entries.flatMap(({ node, at, data }) => [node, at, data]),
    )) as [number, number, string[]];
    if (code === -1) return { result: 'missing' };
    if (code === 0) return { result: 'ended' };
    return { result: 'appended', attempt, ids };
  }

  async followStream(runId: string): Promise<{ status: RunStatus; step: number } | undefined> {
    const [status, step] = (await this.redis.followRun(this.keysOf(runId).run(runId))) as string[];
    return status ? { status: status as RunStatus, step: Number(step ?? 0) } : undefined;
  }

  async readStream(
    runId: string,
    after: string,
    options: { count: number; blockMs?: number },
  ): Promise<StoredStreamEntry[]> {
    const key = this.keysOf(runId).stream(runId);
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
    for (const partition of this.partitions.all) {
      for await (const keys of scanKeys(this.redis, `${escapeGlob(partition.waitersPrefix())}*`, 500)) {
        const pipeline = this.redis.pipeline();
        for (const key of keys) pipeline.scard(key);
        for (const [, size] of (await pipeline.exec()) ?? []) parked += Number(size ?? 0);
      }
    }
    return parked;
  }

  async list(options: ListRunsOptions & { limit: number }): Promise<StoredRun[]> {
    await this.trimIndex();
    const { limit } = options;
    let skip = options.offset ?? 0;
    const found: StoredRun[] = [];
    const pageSize = Math.max((limit + skip) * 2, 50);
    const expired: string[] = [];
    const newest = this.newestRuns(pageSize);
    while (found.length < limit) {
      const ids: string[] = [];
      for (let next = await newest.next(); !next.done; next = await newest.next()) {
        ids.push(next.value);
        if (ids.length === pageSize) break;
      }
      if (ids.length === 0) break;
      const runs = await this.summaries(ids);
      runs.forEach((run, i) => {
        if (!run) return void expired.push(ids[i]!);
        if (options.status && run.status !== options.status) return;
        if (options.flow && run.flow !== options.flow) return;
        if (skip > 0) return void skip--;
        if (found.length < limit) found.push(run);
      });
    }
    // An id whose record is gone without an expiry entry (written before there were any) is
    // dropped once met, after the walk (which counts places in the index).
    await Promise.all([...this.byPartition(expired)].map(([keys, ids]) => this.redis.zrem(keys.runs(), ...ids)));
    return found;
  }

  /**
   * The ids of every partition's runs index, newest first: a merge of the partitions' indexes
   * (each read `pageSize` at a time), by their scores (creation time).
   */
  private async *newestRuns(pageSize: number): AsyncGenerator<string, void, undefined> {
    const heads = this.partitions.all.map((keys) => ({ keys, buffer: [] as [string, number][], read: 0, done: false }));
    for (;;) {
      await Promise.all(
        heads.map(async (head) => {
          if (head.buffer.length > 0 || head.done) return;
          const flat = await this.redis.zrevrange(head.keys.runs(), head.read, head.read + pageSize - 1, 'WITHSCORES');
          for (let i = 0; i < flat.length; i += 2) head.buffer.push([flat[i]!, Number(flat[i + 1])]);
          head.read += flat.length / 2;
          head.done = flat.length / 2 < pageSize;
        }),
      );
      let best: (typeof heads)[number] | undefined;
      for (const head of heads)
        if (head.buffer.length > 0 && (!best || head.buffer[0]![1] > best.buffer[0]![1])) best = head;
      if (!best) return;
      yield best.buffer.shift()![0];
    }
  }

  /**
   * Drops the ids of expired runs from each partition's runs index, a batch of 1000 at a time (up
   * to 100 batches per partition and call): `list` does it first, and workers' recovery sweeps
   * (about 127 bytes per id stay behind each expired run until then).
   *
   * @param options - `minIntervalMs`: do nothing when this store trimmed less than this long ago,
   *   in ms (a sweep beside every heartbeat trims once a minute; default 0, trim now); `signal`:
   *   aborted, stop after the batch under way.
   */
  async trimIndex(options: { minIntervalMs?: number; signal?: AbortSignal } = {}): Promise<void> {
    const now = this.clock.now();
    if (options.minIntervalMs !== undefined && now - this.trimmedAt < options.minIntervalMs) return;
    this.trimmedAt = now;
    const batch = 1000;
    await Promise.all(
      this.partitions.all.map(async (keys) => {
        for (let round = 0; round < 100 && !options.signal?.aborted; round++) {
          const dropped = (await this.redis.trimRuns(
            keys.runs(),
            keys.runsExpiries(),
            this.clock.now(),
            batch,
          )) as number;
          if (dropped < batch) return;
        }
      }),
    );
  }

  /** Run (or task) ids by the keys of their partition, each group in its given order. */
  private byPartition(ids: readonly string[]): Map<RedisKeys, string[]> {
    return groupBy(ids, (id) => this.keysOf(id));
  }

  async summaries(runIds: readonly string[]): Promise<(StoredRun | undefined)[]> {
    if (runIds.length === 0) return [];
    const found = new Map<string, StoredRun>();
    // One pipeline per partition: a cluster takes a pipeline only within one slot's node.
    await Promise.all(
      [...this.byPartition(runIds)].map(async ([keys, ids]) => {
        const pipeline = this.redis.pipeline();
        for (const id of ids) pipeline.hmget(keys.run(id), ...SUMMARY_FIELDS);
        const replies = (await pipeline.exec()) ?? [];
        ids.forEach((id, i) => {
          const values = (replies[i]?.[1] ?? []) as (string | null)[];
          if (!values[0]) return;
          const hash = Object.fromEntries(SUMMARY_FIELDS.map((field, k) => [field, values[k] ?? undefined]));
          found.set(id, { ...runOfHash(id, hash), checkpoint: '' });
        });
      }),
    );
    return runIds.map((id) => found.get(id));
  }

  /**
   * Each partition keeps its own copy of a value its runs claimed (every claim stays within one
   * script). With several partitions, one EXISTS per value and partition, all at once, finds which
   * partitions hold each value, then each value is read once, from the first of them: two round
   * trips, and no text read twice.
   */
  async values(hashes: readonly string[]): Promise<(string | undefined)[]> {
    if (hashes.length === 0) return [];
    if (this.partitions.count === 1) {
      const texts = await this.redis.mget(...hashes.map((hash) => this.home.value(hash)));
      return texts.map((text) => text ?? undefined);
    }
    const held = await Promise.all(
      this.partitions.all.map(async (keys) => {
        const pipeline = this.redis.pipeline();
        for (const hash of hashes) pipeline.exists(keys.value(hash));
        return ((await pipeline.exec()) ?? []).map(([, found]) => Number(found) === 1);
      }),
    );
    const texts: (string | undefined)[] = hashes.map(() => undefined);
    // Partition -> indices of the hashes read there (-1: held nowhere).
    const byPartition = groupBy(hashes.keys(), (i) => held.findIndex((found) => found[i]));
    byPartition.delete(-1);
    await Promise.all(
      [...byPartition].map(async ([partition, indices]) => {
        const keys = this.partitions.all[partition]!;
        const read = await this.redis.mget(...indices.map((i) => keys.value(hashes[i]!)));
        indices.forEach((i, k) => (texts[i] = read[k] ?? undefined));
      }),
    );
    return texts;
  }

  /**
   * Stores the texts of a claim's values that may not be stored yet under staging keys, before the
   * transition that claims them, and returns the hash, staging key pairs its script takes after its
   * fixed ARGV (stagedValues in run-lifecycle.lua). A large value so never passes through a
   * script: Redis runs one script at a time, and one that copies megabytes stalls every client.
   * A transition that is refused (stale, or an idempotency key held) leaves them to
   * {@link RedisRunStore.dropStaged}; a staged text expires (see stageTexts) should its
   * transition never reach Redis.
   *
   * @param copy - also stage copies of the values `claim` references without bringing them that
   *   `runId`'s partition does not hold ({@link RedisRunStore.copiedValues}): for a new run (fork,
   *   retry), and a parent claiming its child's values.
   */
  private async stageValues(runId: string, claim: ValueClaim | undefined, copy = false): Promise<string[]> {
    const texts = { ...claim?.texts };
    if (copy && claim && this.partitions.count > 1) Object.assign(texts, await this.copiedValues(runId, claim));
    return stageTexts(this.redis, this.keysOf(runId), texts);
  }

  /**
   * The texts of the values a run claims without bringing them (a fork's or a retry's, held by the
   * run it came from; a child's outcome's, claimed for its parent) that its partition does not
   * hold: read from another partition, to be copied into its own.
   */
  private async copiedValues(runId: string, claim: ValueClaim): Promise<Record<string, string>> {
    const held = claim.refs.filter((hash) => claim.texts[hash] === undefined);
    if (held.length === 0) return {};
    const keys = this.keysOf(runId);
    const pipeline = this.redis.pipeline();
    for (const hash of held) pipeline.exists(keys.value(hash));
    const replies = (await pipeline.exec()) ?? [];
    const absent = held.filter((_, i) => Number(replies[i]?.[1] ?? 0) === 0);
    const texts = await this.values(absent);
    return Object.fromEntries(absent.flatMap((hash, i) => (texts[i] === undefined ? [] : [[hash, texts[i]!]])));
  }

  /** Deletes the staging keys of a transition that did not claim them (`pairs`: from stageValues). */
  private async dropStaged(pairs: readonly string[]): Promise<void> {
    await dropStaged(this.redis, pairs);
  }

  private valueOptions(
    runId: string,
    claim: ValueClaim | undefined,
  ): {
    valuePrefix: string;
    valuesSuffix: string;
    values?: string[];
  } {
    const keys = this.keysOf(runId);
    return {
      valuePrefix: keys.valuePrefix(),
      valuesSuffix: keys.valuesSuffix(),
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

  async budgetKeys(): Promise<BudgetKeyInfo[]> {
    return this.budgets.keysInUse();
  }

  private common(runId: string, now: number): Record<string, string | number> {
    return { runId, now: String(now), ...this.settings[this.partitions.indexOf(runId)] };
  }

  /**
   * `JSON.stringify({ ...this.common(runId, now), ...options })` for a script called once per
   * step, without copying or encoding the common options again: their text is spliced in.
   * `options` must not repeat a common option's name.
   */
  private optionsJson(runId: string, now: number, options: object): string {
    const own = JSON.stringify(options);
    const head = `{"runId":${JSON.stringify(runId)},"now":"${now}",${this.settingsJson[this.partitions.indexOf(runId)]!}`;
    return own === '{}' ? `${head}}` : `${head},${own.slice(1)}`;
  }
}

/** A wait-for edge (RedisKeys.agentsAsking): the agent asked, the run, its wake id, the reply address, when. */
interface WaitEdge {
  t: string;
  r: string;
  w: string;
  a: string;
  at: number;
}

/** How long a wait cycle's ask answered by a sweep is remembered, so that no sweep answers it twice, in ms. */
const CYCLE_ANSWERED_MS = 60_000;

/** `{ started }` of a transition's reply (CommitReply.started), when it took starts. */
function startedOf(reply: unknown): { started?: TurnStarted[] } {
  const started = turnsStartedOf(reply);
  return started?.length ? { started } : {};
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
    ...(fields.r === undefined ? {} : { restart: decodeJson(fields.r) as unknown as StreamRestart }),
  };
}

/** What giveChildren (run-lifecycle.lua) returns: flow, fingerprint, childTarget, priority, input pairs. */
type GivenChildren = [string, string, string, string, string[]];

/** A child record as create-children.lua and place-children.lua return it: index, flat fields. */
type MadeChild = [number | string, (string | number)[]];

function childRecord(id: string, [, fields]: MadeChild): StoredRun {
  return runOfHash(id, hashOfList(fields.map(String)));
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

/** The task id of a run's first step (`<run id>-0`), as scheduler.ts `taskId` makes it. */
function firstStepTaskId(runId: string): string {
  return taskId({ type: 'step', runId, step: 0 });
}
