import { QueueflowError } from '../errors/queueflow-error.js';
import type { FlowRegistry } from '../interpreter/flow-definition.js';
import type { Json, JsonObject } from '../json/json.js';
import { topicSubscribers } from './topic-subscribers.js';
import type { ReminderChange } from './reminders.js';
import type { ConversationStore } from './conversation-store.js';
import { cancelRun } from '../kernel/cancel-run.js';
import type { Clock } from '../kernel/clock.js';
import type { RunError } from '../kernel/engine.js';
import { newRunId } from '../kernel/run-id.js';
import { prepareRun } from '../kernel/run-client.js';
import { isFinal, type NewRun, type RunStore, type StoredRun, type TurnEndCommit } from '../kernel/run-store.js';
import { taskId, taskOptionsOf, type Scheduler } from '../kernel/scheduler.js';
import { addFirstSteps, startRun, type FirstSteps } from '../kernel/start-run.js';
import type { Checkpoint } from '../interpreter/checkpoint.js';
import type { TurnTaker } from '../kernel/turn-taker.js';
import { decodeCheckpoint } from '../kernel/codec.js';
import { LargeValues } from '../kernel/large-values.js';
import { DEFAULT_LARGE_VALUE_BYTES, refsIn, type ValueClaim } from '../kernel/claim-check.js';
import { corruptRunError } from '../errors/error-record.js';
import { firstState, parseAgentRef, type AgentDefinition } from './define-agent.js';
import type { InboxBound } from '../mailbox/step-mailbox.js';
import {
  AGENT_SEND_WINDOW,
  turnRunId,
  type AgentActivation,
  type AgentStore,
  type FirstState,
  type NextTurnRun,
  type TurnEnd,
  type TurnRunTemplate,
  type TurnStart,
  type TurnStarted,
} from './agent-store.js';

/** Reminders one firing script takes (a second of 10,000 due at once takes several). */
const REMINDER_WINDOW = 200;

/** Keys activated at once after a delivery to many (a publish). */
const ACTIVATION_WINDOW = 64;

export interface AgentRuntimeOptions {
  clock: Clock;
  /** Largest encoded checkpoint, in bytes (a turn's checkpoint holds the state). */
  maxCheckpointBytes: number;
  largeValueBytes?: number;
  /** Where conversations are counted against their budgets; without it, none is. */
  conversations?: ConversationStore;
  /**
   * The checkpoint of a stored run with its values put back (the step driver's).
   * @defaultValue decoded here (a turn's run is never a fan-out child)
   */
  checkpointOf?: (run: StoredRun) => Promise<Checkpoint>;
}

/**
 * The turn lifecycle of keyed agents (README "Agents"), written once over an {@link AgentStore},
 * a {@link RunStore} and a {@link Scheduler}: a message to an idle key starts a turn, a turn's
 * end commits its state and starts the next one. A turn is a run of the agent's turn flow
 * (`agent.<type>`), so everything a run has works inside it.
 *
 * A turn's start and end are each one transition of the agent store, next to the run's own:
 * `activateAgent` (then the run is created and its first step added) and `endTurn` (after the
 * run's end, which starts the next turn in the same transition). A process that dies between two
 * of them leaves the key marked running or its inbox due; {@link AgentRuntime.recover} (a worker's
 * heartbeat) finishes what it left, idempotently.
 */
export class AgentRuntime {
  private readonly types = new Map<string, AgentDefinition<any>>();
  /** Each type's TurnRunTemplate (without its limits), once made; null: its runs cannot be made so. */
  private readonly templates = new Map<string, Omit<TurnRunTemplate, 'maxStateBytes'> | null>();
  private readonly checkpointOf: (run: StoredRun) => Promise<Checkpoint>;
  /** The claim check of stored states: large members stored apart, read back through the cache. */
  private readonly values: LargeValues;

  constructor(
    agents: readonly AgentDefinition<any>[],
    private readonly store: AgentStore,
    private readonly runs: RunStore,
    private readonly scheduler: Scheduler,
    private readonly registry: FlowRegistry,
    private readonly options: AgentRuntimeOptions,
  ) {
    const values = new LargeValues(runs, options.largeValueBytes ?? DEFAULT_LARGE_VALUE_BYTES);
    this.values = values;
    this.checkpointOf =
      options.checkpointOf ??
      (async (run) => decodeCheckpoint(await values.inflateOf(run.checkpoint, run), () => undefined, run));
    for (const agent of agents) {
      const known = this.types.get(agent.type);
      if (known && known !== agent)
        throw new QueueflowError('INVALID_OPTION', `two agent types are registered as '${agent.type}'`, {
          retryable: false,
        });
      this.types.set(agent.type, agent);
    }
  }

  /** The agent type `type`, when this process has its definition. */
  definition(type: string): AgentDefinition<any> | undefined {
    return this.types.get(type);
  }

  /**
   * The bound of the inbox at `address` and the messages it holds now, for a send to check: an
   * agent of a type this process has, with a `capacity`; else `undefined` (unbounded).
   */
  async inboxBound(address: string): Promise<InboxBound | undefined> {
    const parsed = parseAgentRef(address);
    const options = parsed ? this.types.get(parsed.type)?.options : undefined;
    if (options?.capacity === undefined) return undefined;
    return {
      capacity: options.capacity,
      onFull: options.onFull ?? 'reject',
      size: await this.runs.mailboxSize(address),
    };
  }

  /** The addresses a body published on `topic` goes to: see {@link topicSubscribers}. */
  subscribers(topic: string, body: Json): string[] {
    return topicSubscribers(this.types.values(), topic, body);
  }

  /**
   * A turn's step set or cancelled reminders of agent `ref` (`this.remind`), about to commit:
   * stored, and the process's {@link ReminderTimer} told of the earliest set.
   */
  async changeReminders(ref: string, changes: ReminderChange[]): Promise<void> {
    await this.store.changeReminders(ref, changes);
    for (const change of changes) if ('reminder' in change) this.reminderSet?.(change.reminder.due);
  }

  /** Told of each reminder this process sets (its ReminderTimer's `set`). */
  reminderSet: ((due: number) => void) | undefined;

  /**
   * Fires the reminders due now, a window at a time, then starts the turns of the agents they
   * reached. Every due reminder is fired (its message in its inbox, `sentAt` now) before the first
   * turn starts: starting a window's turns takes far longer than firing the next window, and would
   * make the later reminders of a burst late. Resolves when the earliest reminder left is due
   * (epoch ms).
   */
  async fireReminders(): Promise<number | undefined> {
    const reached: string[] = [];
    for (;;) {
      const { delivered, next } = await this.store.fireReminders(this.options.clock.now(), REMINDER_WINDOW);
      reached.push(...delivered);
      if (delivered.length < REMINDER_WINDOW) {
        await this.delivered(reached);
        return next;
      }
    }
  }

  /** The agent types this process has. */
  definitions(): AgentDefinition<any>[] {
    return [...this.types.values()];
  }

  /**
   * Messages reached `addresses` (a send, a step's commit or park): starts a turn of each agent
   * among them that is idle. An agent of a type this process lacks is left to a process that has
   * it (its inbox is due: {@link AgentRuntime.recover}).
   */
  async delivered(addresses: Iterable<string>, taker?: TurnTaker): Promise<void> {
    const ours = [...new Set(addresses)].filter((address) => this.types.has(parseAgentRef(address)?.type ?? ''));
    for (let first = 0; first < ours.length; first += ACTIVATION_WINDOW)
      await Promise.all(ours.slice(first, first + ACTIVATION_WINDOW).map((ref) => this.activate(ref, taker)));
  }

  /**
   * The turns of idle agents among `addresses` (of types this process has) that the transition
   * delivering to them may start itself (TurnHooks.turnStarts): the run of one of them taken by
   * `taker` when it claims it.
   */
  turnStarts(addresses: string[], taker?: TurnTaker): TurnStart[] {
    const starts: TurnStart[] = [];
    // A window at most: a step that sends to many agents starts the others after its transition.
    for (const ref of [...new Set(addresses)].slice(0, AGENT_SEND_WINDOW)) {
      const first = this.firstStateOf(ref);
      if (!first) continue;
      const run = this.turnRunTemplate(ref, taker);
      starts.push(run ? { ref, first, run } : { ref, first });
    }
    return starts;
  }

  /**
   * A transition delivered to `addresses`, given `starts`, and answered `started`
   * (TurnHooks.deliveredWith): the turns it started begin, the other addresses are delivered.
   */
  async deliveredWith(
    addresses: string[],
    starts: TurnStart[] | undefined,
    started: TurnStarted[] | undefined,
    taker?: TurnTaker,
  ): Promise<void> {
    const handled = new Set((started ?? []).map(({ ref }) => ref));
    const now = this.options.clock.now();
    // The one the store made taken first: the chain claims it before any other turn.
    const order = [...(started ?? [])].sort(
      (a, b) => Number(b.activation?.made === 'taken') - Number(a.activation?.made === 'taken'),
    );
    const runs = new Map((starts ?? []).map((start) => [start.ref, start.run]));
    for (const { ref, activation } of order) {
      const run = runs.get(ref);
      if (activation) await this.startTurn(ref, activation, false, taker, undefined, madeRunOf(activation, run, now));
    }
    await this.delivered(
      addresses.filter((address) => !handled.has(address)),
      taker,
    );
  }

  /**
   * Turn runs a lost answer's transition may have made taken by this worker (TurnHooks.madeRunsLost):
   * the next turn's run of `turnEnd`, the running turns of the agents of `starts`, each if it was
   * made at `now` (by that transition, not by another worker's) and has not started: its first
   * step gets a task.
   */
  async madeRunsLost(turnEnd: TurnEndCommit | undefined, starts: TurnStart[] | undefined, now: number): Promise<void> {
    const candidates: { id: string; made: number }[] = [];
    const next = turnEnd?.end.nextRun;
    if (next?.takenBy !== undefined) candidates.push({ id: next.id, made: turnEnd!.end.now });
    for (const start of starts ?? []) {
      if (start.run?.takenBy === undefined) continue;
      const running = (await this.store.loadAgent(start.ref))?.running;
      if (running !== undefined) candidates.push({ id: running, made: now });
    }
    for (const { id, made } of candidates) {
      const run = await this.runs.load(id);
      if (run?.status === 'running' && run.step === 0 && run.createdAt === made)
        await this.scheduler.addStep(run.id, 0, run.target, taskOptionsOf(run));
    }
  }

  /**
   * Starts a turn of agent `ref` if it is idle and has a message: run by `taker` when it claims it
   * (a worker's chain, in the slot the sender left), else by its first step's task.
   */
  async activate(ref: string, taker?: TurnTaker): Promise<void> {
    const now = this.options.clock.now();
    // Claimed while the script runs (activations of several keys go at once), then given back for
    // startTurn to claim the run, made taken or not.
    const template = this.turnRunTemplate(ref, taker);
    const claimed = template?.takenBy !== undefined && taker!.claim(template.target);
    let activation: AgentActivation | undefined;
    try {
      activation = await this.store.activateAgent(
        ref,
        this.firstStateOf(ref)!,
        now,
        template && !claimed ? withoutTaker(template) : template,
      );
    } finally {
      if (claimed) taker!.unclaim();
    }
    if (activation)
      await this.startTurn(ref, activation, false, taker, undefined, madeRunOf(activation, template, now));
  }

  /**
   * How a store may make the run of a turn of agent `ref` with its activation (see
   * TurnRunTemplate), taken by `taker` when it claims it; `undefined` for a type this process
   * lacks, or one whose runs cannot be made so.
   */
  turnRunTemplate(ref: string, taker?: TurnTaker): TurnRunTemplate | undefined {
    const definition = this.types.get(parseAgentRef(ref)?.type ?? '');
    if (!definition) return undefined;
    let template = this.templates.get(definition.type);
    if (template === undefined) {
      template =
        templateOf(definition, (shared) => prepareRun(this.registry, definition.flow, shared, {}, this.options)) ??
        null;
      // Checked once per type: a flow whose first checkpoint is not the state plus a fixed tail
      // (never, today) has its runs made by startTurn.
      this.templates.set(definition.type, template);
    }
    if (template === null) return undefined;
    const maxStateBytes = Math.min(
      this.options.largeValueBytes ?? DEFAULT_LARGE_VALUE_BYTES,
      this.options.maxCheckpointBytes - template.checkpointTail.length - SHARED_HEAD.length,
    );
    return {
      ...template,
      maxStateBytes,
      ...(taker?.mayTake(template.target) ? { takenBy: taker.worker } : {}),
    };
  }

  /**
   * The state agent `ref` starts from at its first activation (`state()` of its type, a fresh
   * incarnation), for a store to make it atomically with the activation; `undefined` when this
   * process lacks the type.
   */
  firstStateOf(ref: string): FirstState | undefined {
    const definition = this.types.get(parseAgentRef(ref)?.type ?? '');
    if (!definition) return undefined;
    return {
      state: JSON.stringify(firstState(definition)),
      version: definition.options.version ?? 1,
      incarnation: newRunId(),
    };
  }

  /**
   * Creates the runs of the turns a store started (AgentStore.send) and adds their first steps:
   * those of several turns in bulk (should that add fail, their runs are left queued:
   * {@link AgentRuntime.recover} adds their steps); one turn's alone, as a bulk add of one costs a
   * transaction more.
   */
  async started(turns: readonly { ref: string; activation: AgentActivation }[]): Promise<void> {
    const firstSteps: FirstSteps | undefined = turns.length > 1 ? [] : undefined;
    const now = this.options.clock.now();
    await Promise.all(
      turns.map(({ ref, activation }) =>
        this.startTurn(
          ref,
          activation,
          false,
          undefined,
          firstSteps,
          madeRunOf(activation, activation.made ? this.turnRunTemplate(ref) : undefined, now),
        ),
      ),
    );
    if (firstSteps) await addFirstSteps(this.scheduler, firstSteps);
  }

  /**
   * Creates the run of a turn that was activated and adds its first step. A state that cannot be
   * migrated, or is no longer valid input, fails the turn (its message goes to the dead letters).
   */
  private async startTurn(
    ref: string,
    activation: AgentActivation,
    recovering = false,
    taker?: TurnTaker,
    firstSteps?: FirstSteps,
    nextRun?: NextTurnRun,
  ): Promise<void> {
    let next: AgentActivation | undefined = activation;
    while (next) {
      const current: AgentActivation = next;
      next = undefined;
      const definition = this.types.get(parseAgentRef(ref)!.type)!;
      const turn = { agent: ref, turn: current.turn, message: current.message };
      // The run the turn's end prepared from the state it committed (TurnEnd.nextRun): this turn's.
      const prepared = nextRun?.id === current.runId ? nextRun : undefined;
      nextRun = undefined;
      try {
        if (prepared && current.made) {
          // Made by the transition that started it: taken by the caller's chain (which claims it:
          // the store took one run at most), or its first step due.
          if (current.made === 'taken' && taker?.claim(prepared.target)) taker.take({ ...prepared, turn });
          else if (current.made === 'taken') {
            // Made taken, but the chain runs another turn: it gets a task, and leaves the taken set.
            await this.scheduler.addStep(prepared.id, 0, prepared.target, taskOptionsOf(prepared));
            if (prepared.takenBy !== undefined)
              await this.runs.releaseTaken(prepared.takenBy, [taskId({ type: 'step', runId: prepared.id, step: 0 })]);
          } else if (firstSteps)
            firstSteps.push({ runId: prepared.id, target: prepared.target, options: taskOptionsOf(prepared) });
          else await this.scheduler.addStep(prepared.id, 0, prepared.target, taskOptionsOf(prepared));
          continue;
        }
        if (recovering && (await this.runs.position(current.runId))) {
          const run = await this.runs.load(current.runId);
          if (run && !isFinal(run.status) && run.step === 0)
            await this.scheduler.addStep(run.id, 0, run.target, taskOptionsOf(run));
          return;
        }
        await this.admit(ref, current);
        // (A run prepared for the store to make is made here: taken only if the chain claims it.)
        const { takenBy: _prepared, ...template } = prepared ?? (await this.prepareTurn(definition, current));
        const run = { ...template, id: current.runId, turn };
        if (taker?.claim(run.target)) {
          // Made here, taken by the caller's chain in the same transition: should its worker die
          // before it runs the turn, a survivor starts it (the worker's taken tasks).
          const turn = { ...run, now: this.options.clock.now(), takenBy: taker.worker };
          await this.runs.create(turn);
          taker.take(turn);
        } else {
          await startRun(this.runs, this.scheduler, run, this.options.clock.now(), firstSteps);
        }
      } catch (error) {
        if (!(error instanceof QueueflowError) || error.code === 'REDIS_UNAVAILABLE' || error.code === 'REDIS_TIMEOUT')
          throw error;
        // No run can be made of this state: the turn fails at once, as a turn whose run failed
        // (and, admitted in its conversation, leaves its running turns there).
        const conversation = current.message.conversation;
        if (conversation !== undefined) await this.options.conversations?.turnEnded(conversation, current.runId);
        const reply = await this.store.endTurn(ref, {
          runId: current.runId,
          status: 'failed',
          messageId: current.message.id,
          error: { message: error.message, code: error.code },
          now: this.options.clock.now(),
        });
        next = reply.next;
      }
    }
  }

  /** The run of turn `activation`: from its committed state, migrated when its version is older. */
  private async prepareTurn(definition: AgentDefinition<any>, activation: AgentActivation): Promise<NewRun> {
    const state = this.migrated(definition, activation, await this.turnState(definition, activation));
    // The values the stored state references are stored (the key holds them): the run's
    // checkpoint refers to them without bringing their texts again.
    const storedValues = new Set(refsIn(activation.state));
    return prepareRun(this.registry, definition.flow, state, {}, { ...this.options, storedValues });
  }

  /**
   * Counts a turn in its message's conversation. A turn past the conversation's budget (or in one
   * that ended) does not run: the conversation's running turns are cancelled, and this one fails.
   * @throws QueueflowError `CONVERSATION_BUDGET` naming the limit.
   */
  private async admit(ref: string, activation: AgentActivation): Promise<void> {
    const id = activation.message.conversation;
    if (id === undefined || !this.options.conversations) return;
    const reply = await this.options.conversations.turnStarted(id, {
      ref,
      runId: activation.runId,
      turn: activation.turn,
      message: { id: activation.message.id, from: activation.message.from, at: activation.message.sentAt },
      now: this.options.clock.now(),
    });
    if (reply.admitted) return;
    for (const runId of reply.running) await this.cancelTurn(runId);
    throw new QueueflowError('CONVERSATION_BUDGET', reply.error.message, { retryable: false });
  }

  /**
   * Agent `ref`'s turn spent `amount` of `key` in conversation `id` (`this.spend`). Past the
   * budget's cost (or in a conversation that has ended) its running turns are cancelled, this
   * one among them.
   * @throws QueueflowError `CONVERSATION_BUDGET` naming the limit, then.
   */
  async spend(id: string, ref: string, key: string, amount: number): Promise<void> {
    const reply = await this.options.conversations?.spend(id, { ref, key, amount, now: this.options.clock.now() });
    if (!reply || reply.ok) return;
    for (const runId of reply.running) await this.cancelTurn(runId);
    throw new QueueflowError('CONVERSATION_BUDGET', reply.error.message, { retryable: false });
  }

  /** Cancels the run of a turn, and its key goes on (its message to the dead letters). */
  private async cancelTurn(runId: string): Promise<void> {
    await cancelRun(this.runs, this.scheduler, runId, 'conversation-budget');
    const run = await this.runs.load(runId);
    if (run) await this.runEnded(run);
  }

  /**
   * The stored state `encoded` with the values it references put back (read once, then cached):
   * what turns, queries and `engine.agent` see.
   * @throws Error naming a value no longer stored.
   */
  async state(encoded: string): Promise<JsonObject> {
    return JSON.parse(await this.values.inflate(encoded)) as JsonObject;
  }

  /**
   * `state` as the store keeps it: its members over `largeValueBytes` set apart, as references,
   * and the claim of those values (`undefined`: none). `text` is its JSON when the caller has it;
   * `held` a stored form whose values are stored already (their texts are not brought again).
   */
  encodeState(state: JsonObject, text?: string, held?: string): { state: string; values?: ValueClaim } {
    const json = text ?? JSON.stringify(state);
    const check = this.values.check();
    const encoded = check.externalizeShared(state, json);
    if (!check.holdsAny()) return { state: json };
    return { state: JSON.stringify(encoded), values: check.claim(new Set(held === undefined ? [] : refsIn(held)))! };
  }

  /** The committed state of a turn that starts, its values put back. @throws QueueflowError `CORRUPT_RUN`. */
  private async turnState(definition: AgentDefinition<any>, activation: AgentActivation): Promise<JsonObject> {
    try {
      return await this.state(activation.state);
    } catch (error) {
      if (error instanceof SyntaxError) throw error;
      throw corruptRunError(
        { id: activation.runId, flow: definition.flow.name },
        `the agent's state references ${(error as Error).message}`,
      );
    }
  }

  /** The state a turn starts from: the committed one, migrated when its version is older. */
  private migrated(definition: AgentDefinition<any>, activation: AgentActivation, state: JsonObject): JsonObject {
    const version = definition.options.version ?? 1;
    if (activation.version === version || !definition.options.migrate) return state;
    try {
      return definition.options.migrate(state, activation.version) as JsonObject;
    } catch (error) {
      throw new QueueflowError(
        'NODE_FAILED',
        `agent type '${definition.type}': migrate from version ${activation.version} to ${version} threw: ${(error as Error).message}`,
        { cause: error, retryable: false },
      );
    }
  }

  /**
   * Run `run` ended (any run: only a turn's end matters here). A completed turn commits its
   * final `shared` as the state; `shared` is read from the run when not given.
   */
  async runEnded(run: StoredRun, shared?: JsonObject, taker?: TurnTaker): Promise<void> {
    const turn = run.turn;
    if (!turn || !isFinal(run.status)) return;
    const definition = this.types.get(parseAgentRef(turn.agent)?.type ?? '');
    if (!definition) return; // a process with the type finishes it (recover)
    const conversation = turn.message.conversation;
    if (conversation !== undefined) await this.options.conversations?.turnEnded(conversation, run.id);
    const status = run.status as TurnEnd['status'];
    if (status === 'completed') shared ??= (await this.checkpointOf(run)).shared;
    const end = this.endOf(definition, run, status, shared, run.error);
    const nextRun = this.nextRunOf(run, end, taker);
    if (nextRun) end.nextRun = nextRun;
    const reply = await this.store.endTurn(turn.agent, end);
    await this.endCommitted(turn.agent, end, reply, taker);
  }

  /**
   * The end of turn run `run`, to commit with its last step (TurnHooks.turnEnd): only a turn of a
   * type this process has, in no conversation (whose count of running turns changes apart), whose
   * state references no value that may need storing; else `undefined`, and it ends after
   * (runEnded).
   */
  async turnEnd(
    run: StoredRun,
    status: 'completed' | 'failed',
    shared?: JsonObject,
    error?: RunError,
    taker?: TurnTaker,
  ): Promise<TurnEndCommit | undefined> {
    const turn = run.turn;
    const definition = this.types.get(parseAgentRef(turn?.agent ?? '')?.type ?? '');
    if (!turn || !definition || turn.message.conversation !== undefined) return undefined;
    if (status === 'completed' && shared === undefined) return undefined;
    const end = this.endOf(definition, run, status, shared, error);
    if (end.values) return undefined;
    const nextRun = this.nextRunOf(run, end, taker);
    if (nextRun) end.nextRun = nextRun;
    return { agent: turn.agent, end };
  }

  /** The store ended a turn with its run's last step (TurnHooks.turnEndCommitted). */
  async turnEndCommitted(
    { agent, end }: TurnEndCommit,
    ended: { result: 'ended' | 'stale'; next?: AgentActivation },
    taker?: TurnTaker,
  ): Promise<void> {
    await this.endCommitted(agent, end, ended, taker);
  }

  /** Turn `end` of agent `ref` committed: the next turn it started (if any) starts. */
  private async endCommitted(
    ref: string,
    end: TurnEnd,
    ended: { result: 'ended' | 'stale'; next?: AgentActivation },
    taker?: TurnTaker,
  ): Promise<void> {
    if (ended.next) await this.startTurn(ref, ended.next, false, taker, undefined, end.nextRun);
  }

  /**
   * The run of the key's next turn, made from the state turn run `run` commits (`end.state`) as
   * its type's TurnRunTemplate says, for the end's transition to make should a message wait
   * (TurnEnd.nextRun); taken by `taker` when it claims it. None for a state the template cannot
   * make a run of (one with values stored apart, or too long).
   */
  private nextRunOf(run: StoredRun, end: TurnEnd, taker: TurnTaker | undefined): NextTurnRun | undefined {
    if (end.status !== 'completed' || end.values || end.state === undefined) return undefined;
    const template = this.turnRunTemplate(run.turn!.agent);
    if (!template || Buffer.byteLength(end.state) > template.maxStateBytes) return undefined;
    const number = run.turn!.turn;
    const id = turnRunId(run.id.slice(0, run.id.length - `t${number}`.length), number + 1);
    const takes = taker?.mayTake(template.target) === true;
    return runOfTemplate(id, end.state, takes ? { ...template, takenBy: taker!.worker } : template, end.now);
  }

  /** How turn run `run` of an agent of `definition` ends as `status`: completed with `shared`. */
  private endOf(
    definition: AgentDefinition<any>,
    run: StoredRun,
    status: TurnEnd['status'],
    shared: JsonObject | undefined,
    error: RunError | undefined,
  ): TurnEnd {
    const idleTtlMs = definition.options.idleTtlMs;
    const end: TurnEnd = {
      runId: run.id,
      status,
      messageId: run.turn!.message.id,
      now: this.options.clock.now(),
      ...(idleTtlMs === undefined ? {} : { idleTtlMs }),
    };
    if (status === 'completed') {
      // The run's checkpoint holds the values it references: they are stored.
      const { state, values } = this.encodeState(shared!, undefined, run.checkpoint);
      end.state = state;
      if (values) end.values = values;
      end.version = definition.options.version ?? 1;
    } else {
      end.error = error ?? cancelledError(run.id);
    }
    return end;
  }

  /** A run ended with this status and error, as the step driver committed it. */
  async turnCommitted(
    run: StoredRun,
    status: 'completed' | 'failed',
    shared?: JsonObject,
    error?: RunError,
  ): Promise<void> {
    await this.runEnded(
      { ...run, status, ...(error === undefined ? {} : { error }) },
      status === 'completed' ? shared : undefined,
    );
  }

  /**
   * Finishes what a process that died between two transitions left (a worker's heartbeat calls
   * it): a turn whose run was never made, or ended without its key hearing of it; an inbox that got
   * a message in a commit whose process died before it started the key's turn.
   *
   * @param turnsOlderThanMs - only turns started or claimed this long ago (ms): their process may
   *   still be at them.
   * @param inboxesOlderThanMs - only inboxes due this long (ms).
   */
  async recover(turnsOlderThanMs: number, inboxesOlderThanMs: number): Promise<void> {
    const now = this.options.clock.now();
    for (const { ref, runId } of await this.store.turnsDue(now - turnsOlderThanMs, now)) {
      const parsed = parseAgentRef(ref);
      if (!parsed || !this.types.has(parsed.type)) continue;
      const run = await this.runs.load(runId);
      if (run) {
        if (isFinal(run.status)) await this.runEnded(run);
        // Made by a client that died before it added the first step's task: it gets it now. (A
        // turn a worker's chain made is `running` and among its taken tasks: claimTaken starts it.)
        else if (run.status === 'queued') await this.scheduler.addStep(run.id, 0, run.target, taskOptionsOf(run));
        continue;
      }
      const agent = await this.store.loadAgent(ref);
      if (agent?.running !== runId || !agent.next) continue;
      const turn = Number(runId.slice(runId.lastIndexOf('t') + 1));
      await this.startTurn(ref, { runId, turn, state: agent.state, version: agent.version, message: agent.next }, true);
    }
    for (const ref of await this.store.inboxesDue(now - inboxesOlderThanMs, now)) {
      const parsed = parseAgentRef(ref);
      if (parsed && this.types.has(parsed.type)) await this.activate(ref);
    }
  }
}

/** How a turn run's checkpoint starts (TurnRunTemplate): its state follows. */
const SHARED_HEAD = '{"shared":';

/**
 * The TurnRunTemplate of `definition`'s turns, from `prepare` (prepareRun of its turn flow):
 * checked on two states that the checkpoint is the state plus a fixed tail; else `undefined`.
 */
function templateOf(
  definition: AgentDefinition<any>,
  prepare: (shared: JsonObject) => NewRun,
): Omit<TurnRunTemplate, 'maxStateBytes'> | undefined {
  const empty = prepare({});
  const probe = prepare({ probe: [1] });
  const head = `${SHARED_HEAD}{}`;
  if (!empty.checkpoint.startsWith(head)) return undefined;
  const checkpointTail = empty.checkpoint.slice(head.length);
  if (probe.checkpoint !== `${SHARED_HEAD}{"probe":[1]}${checkpointTail}`) return undefined;
  return {
    flow: empty.flow,
    fingerprint: empty.fingerprint,
    checkpointTail,
    target: empty.target,
    version: definition.options.version ?? 1,
    ...(empty.priority === undefined ? {} : { priority: empty.priority }),
  };
}

/** The run a store made with `activation` from `template` (AgentActivation.made), else `undefined`. */
function madeRunOf(
  activation: AgentActivation,
  template: TurnRunTemplate | undefined,
  now: number,
): NextTurnRun | undefined {
  if (!activation.made || !template) return undefined;
  return runOfTemplate(
    activation.runId,
    activation.state,
    activation.made === 'taken' ? template : withoutTaker(template),
    now,
  );
}

/** `template` for a run no chain takes. */
function withoutTaker(template: TurnRunTemplate): TurnRunTemplate {
  const { takenBy: _taker, ...rest } = template;
  return rest;
}

/** Run `id` of a turn that starts from `state` (JSON), made from `template`. */
function runOfTemplate(id: string, state: string, template: TurnRunTemplate, now: number): NextTurnRun {
  return {
    id,
    flow: template.flow,
    fingerprint: template.fingerprint,
    checkpoint: `${SHARED_HEAD}${state}${template.checkpointTail}`,
    target: template.target,
    now,
    ...(template.priority === undefined ? {} : { priority: template.priority }),
    ...(template.takenBy === undefined ? {} : { takenBy: template.takenBy }),
  };
}

function cancelledError(runId: string): RunError {
  return { message: `the turn's run '${runId}' was cancelled`, code: 'RUN_CANCELLED' };
}
