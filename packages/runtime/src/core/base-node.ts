import type { Json } from '../json/json.js';
import { InvalidArgumentError, QueueflowError } from '../errors/queueflow-error.js';
import { checkAgentRef, parseAgentRef } from '../agent/agent-ref.js';
import type { ReminderOptions } from '../agent/reminders.js';
import type { SharedMemory } from '../agent/shared-memory.js';
import { mailboxOf } from '../mailbox/mailbox-of.js';
import type { Message, ReceiveOptions, Received, SendOptions } from '../mailbox/message.js';
import type { Action, MaybePromise, NonIterableObject, ParamsObject } from './types.js';
import { DEFAULT_ACTION } from './types.js';
import { visitOf, type FlowRunState, type RunContext } from './run-context.js';
import { emitterOf } from '../stream/emitter-of.js';
import { encodeStreamData } from '../stream/stream-entry.js';
import { warn } from './warnings.js';

/**
 * The smallest unit of a graph: `prep(shared)` → `exec(prepRes)` →
 * `post(shared, prepRes, execRes)`, where `post` returns the action that picks the successor
 * (rule S1).
 *
 * Node objects are templates: a Flow runs a shallow copy per visit ({@link BaseNode.clone}), so
 * fields set during a visit never leak into the next visit, run or concurrent branch. An object
 * or array held by a field of the template is shared by every copy, as in PocketFlow: keep
 * per-run data in `shared` or `params`, not in such fields (rule S6).
 *
 * @typeParam S - the shared store's type.
 * @typeParam P - the params' type.
 * @see PocketFlow `BaseNode` (Python reference) and the PocketFlow TypeScript port.
 */
export class BaseNode<S = unknown, P extends ParamsObject = NonIterableObject> {
  /**
   * Stable name of this node within its graph. Engines that move runs between processes use
   * it as the node's id; without it the id is the class name and the node's position.
   */
  declare name: string | undefined;
  protected _params: P = {} as P;
  protected _successors: Map<Action, BaseNode<any, any>> = new Map();

  /** The params of this visit (set by the enclosing Flow, rule S6). */
  get params(): P {
    return this._params;
  }

  /**
   * Where this visit runs: the run's id, the flow's name, the step counter and the index of the
   * current try, the same on `flow.run`, LocalEngine and RedisEngine (see {@link RunContext}).
   * `undefined` outside a run (a lifecycle method called directly).
   *
   * @example
   * ```ts
   * override exec() { return callModel({ idempotencyKey: `${this.runContext?.runId}-${this.runContext?.step}` }); }
   * ```
   */
  get runContext(): RunContext | undefined {
    const facts = visitOf(this);
    if (!facts) return undefined;
    const attempt = (this as { currentRetry?: number }).currentRetry ?? 0;
    return { runId: facts.runId, flow: facts.flow, step: facts.step, attempt };
  }

  /**
   * In an agent's turn (`defineAgent`), the message the turn handles: answer an `ask` with
   * `this.reply(this.message, body)`. `undefined` outside a turn.
   */
  get message(): Message | undefined {
    return visitOf(this)?.message;
  }

  /** In an agent's turn, the agent's address (`agent:<type>/<key>`); `undefined` outside a turn. */
  get agentRef(): string | undefined {
    return visitOf(this)?.agent;
  }

  /**
   * In an agent's turn, the agent's key; `undefined` outside a turn. In a forked conversation's
   * copy of an agent (`engine.forkConversation`), the key it was forked from.
   * @example
   * ```ts
   * const other = this.agentKey === 'ping' ? 'pong' : 'ping';
   * ```
   */
  get agentKey(): string | undefined {
    const visit = visitOf(this);
    const ref = visit?.agent;
    if (ref === undefined) return undefined;
    // A fork's copy (forkConversation) goes by the key it was forked from: its code runs as it did.
    const forks = visit?.message?.forks;
    const original = forks ? Object.keys(forks).find((address) => forks[address] === ref) : undefined;
    return parseAgentRef(original ?? ref)?.key;
  }

  /** Successors by action; read-only view. */
  get successors(): ReadonlyMap<Action, BaseNode<any, any>> {
    return this._successors;
  }

  /** Reads what `exec` needs from `shared`. Runs once per visit; never retried. */
  prep(_shared: S): MaybePromise<unknown> {
    return undefined;
  }

  /** The work of the node; must not touch `shared`. May be retried (see `Node`). */
  exec(_prepRes: unknown): MaybePromise<unknown> {
    return undefined;
  }

  /**
   * Writes results to `shared` and returns the next action (`undefined` means `"default"`).
   * Runs once per visit; never retried.
   */
  post(_shared: S, _prepRes: unknown, _execRes: unknown): MaybePromise<Action | undefined | void> {
    return undefined;
  }

  /**
   * @internal Runs `exec` under the node's retry policy; overridden by `Node` and the batches.
   * `abort` ends the visit early when a sibling branch failed.
   */
  async _exec(prepRes: unknown, _abort?: AbortSignal): Promise<unknown> {
    return await this.exec(prepRes);
  }

  /**
   * @internal One visit: prep → exec → post (rule S1). When `abort` fires, the visit stops
   * before `post`, so an abandoned branch writes nothing more to `shared` (rule S10).
   */
  async _run(shared: S, abort?: AbortSignal): Promise<Action | undefined> {
    const prepRes = await this.prep(shared);
    const execRes = await this._exec(prepRes, abort);
    abort?.throwIfAborted();
    return (await this.post(shared, prepRes, execRes)) ?? undefined;
  }

  /**
   * Runs this node alone and returns its action. Successors are not run: use a Flow for that
   * (rule S11 warns `Node won't run successors. Use Flow.`). `flow.run` has no JSON boundary:
   * `shared` and what nodes return pass through untouched (class instances, functions, keys such
   * as `__proto__`), where the engines refuse what would not survive JSON.
   */
  async run(shared: S): Promise<Action | undefined> {
    if (this._successors.size > 0) {
      warn('QF_NODE_WONT_RUN_SUCCESSORS', "Node won't run successors. Use Flow.");
    }
    return await this._run(shared);
  }

  /** Replaces this node's params. Returns `this`. */
  setParams(params: P): this {
    this._params = params;
    return this;
  }

  /** Sets the `"default"` successor and returns `node`, so chains read `a.next(b).next(c)` (rule S4). */
  next<T extends BaseNode<any, any>>(node: T): T {
    this.on(DEFAULT_ACTION, node);
    return node;
  }

  /** Sets the successor for `action` and returns `this`; overwriting one warns (rule S4). */
  on(action: Action, node: BaseNode<any, any>): this {
    if (typeof action !== 'string') {
      throw new TypeError(`${this.constructor.name}.on: expected \`action\` to be a string, got ${typeof action}`);
    }
    if (this._successors.has(action)) {
      warn('QF_SUCCESSOR_OVERWRITTEN', `Overwriting successor for action '${action}'`);
    }
    this._successors.set(action, node);
    return this;
  }

  /**
   * The successor for `action` (`undefined` or `""` mean `"default"`). When there is none while
   * the node has other successors, warns `Flow ends: '<action>' not found in [...]` (rule S5).
   */
  getNextNode(action?: Action): BaseNode<any, any> | undefined {
    const key = action || DEFAULT_ACTION;
    const next = this._successors.get(key);
    if (!next && this._successors.size > 0) {
      warn('QF_FLOW_ENDS', `Flow ends: '${key}' not found in [${[...this._successors.keys()].join(', ')}]`);
    }
    return next;
  }

  /**
   * Sends `body` to the mailbox at `address`. With `flow.run` it goes to this process's
   * in-memory mailboxes at once; on an engine it leaves when this step commits (or parks), so a
   * step run again after a crash does not send twice.
   *
   * @throws QueueflowError NOT_JSON when `body` would not survive JSON; TypeError (code `INVALID_ARGUMENT`) for a bad address.
   */
  send(address: string, body: Json, options?: SendOptions): Promise<void> {
    return mailboxOf(this).send(address, body, options);
  }

  /**
   * The next message at `address`; waits for one, or resolves `undefined` after `timeoutMs`
   * (milliseconds). On an engine a run waiting on an empty mailbox is parked (no worker, no
   * connection held) and its step runs again from the start when a message comes: call
   * `receive` early (in `prep`) and keep the code before it free of side effects. The message
   * counts as consumed when the step commits; after a crash it is delivered again (same `id`).
   */
  receive(address: string, options?: ReceiveOptions): Promise<Message | undefined> {
    return mailboxOf(this).receive(address, options);
  }

  /**
   * The first message of several mailboxes (select): `{ address, message }` for the head of the
   * first of `addresses` that holds one (in the order given), else for the first message to
   * arrive at any of them; `undefined` after `timeoutMs` (milliseconds). Only that message is
   * taken: the others stay in their mailboxes. On an engine a run that waits is parked on every
   * address at once, and its step runs again from the start when a message comes (as `receive`).
   *
   * @throws TypeError (code `INVALID_ARGUMENT`) for an empty list, a bad or repeated address, or
   *   (on an engine) an agent's inbox (its turns read it as `this.message`).
   * @example
   * ```ts
   * const got = await this.receiveAny(['orders', 'cancellations'], { timeoutMs: 60_000 });
   * if (got?.address === 'cancellations') return 'cancel';
   * ```
   */
  receiveAny(addresses: readonly string[], options?: ReceiveOptions): Promise<Received | undefined> {
    return mailboxOf(this).receiveAny(addresses, options);
  }

  /**
   * Request/reply: sends `body` to `address` with a fresh reply address and waits for the
   * answer (see {@link BaseNode.reply}); `undefined` after `timeoutMs` milliseconds.
   */
  async ask(address: string, body: Json, options?: ReceiveOptions): Promise<Message | undefined> {
    const mailbox = mailboxOf(this);
    const replyTo = mailbox.replyAddress();
    await mailbox.send(address, body, { replyTo });
    return mailbox.receive(replyTo, options);
  }

  /**
   * Appends `data` to the run's stream, for whoever follows the run live (a model's tokens as
   * they come, what an agent says): `engine.stream(runId)`, `queueflow tail`, or the `onEmit`
   * option of `flow.run` (without it, `flow.run` drops the entries). Returns at once; on an
   * engine the entry is written in the background, in emit order, and before the step commits.
   * Entries of a try that fails later stay in the stream with their `attempt`. A step that parks
   * on `receive` runs again from its start when woken: emit after the `receive`.
   *
   * @throws QueueflowError `NOT_JSON` naming the path, `PAYLOAD_TOO_LARGE` for data over
   *   `MAX_STREAM_ENTRY_BYTES` (64 KiB) as JSON.
   * @example
   * ```ts
   * override async exec(prompt: string) {
   *   let text = '';
   *   for await (const token of model.stream(prompt)) { this.emit({ token }); text += token; }
   *   return text;
   * }
   * ```
   */
  emit(data: Json): void {
    const encoded = encodeStreamData(data);
    const attached = emitterOf(this);
    if (attached) return attached.port.emit(attached.node, encoded);
    const facts = visitOf(this);
    if (facts?.run?.stream) emitLocally(facts.run, this, facts.step, encoded);
  }

  /**
   * Publishes `body` on `topic`: every agent type of the engine that subscribes to the topic
   * (`defineAgent`'s `subscribe`) gets it at the keys its mapping names, each with the same
   * message id. On an engine it leaves when this step commits, as a send does.
   * @throws QueueflowError `INVALID_OPTION` for a bad topic, `NOT_JSON`, `PAYLOAD_TOO_LARGE`.
   */
  publish(topic: string, body: Json): Promise<void> {
    return mailboxOf(this).publish(topic, body);
  }

  /**
   * Shared memory `name` (README "Conversations", shared memory): a JSON document that agents and
   * runs share, versioned, `{}` at version 0 before its first update. Resolves
   * `{ value, version, update(patch, { ifVersion? }) }`: `update` stages a JSON Patch (RFC 6902)
   * written when this step ends, before its commit, each update once (by id) even when the step
   * runs again after a crash. With `ifVersion`, a version that is no longer the latest fails with
   * `MEMORY_CONFLICT`, naming the paths written and the writer that won: at once when it is not
   * the version read, else at the step's end (the step then fails with it). On an engine only.
   *
   * @example
   * ```ts
   * const plan = await this.memory('plan');
   * await plan.update([{ op: 'add', path: '/steps/-', value: 'draft' }], { ifVersion: plan.version });
   * ```
   * @throws QueueflowError `INVALID_OPTION` for a bad name or patch, or on `flow.run`.
   */
  memory(name: string): Promise<SharedMemory> {
    const mailbox = mailboxOf(this) as Partial<{ memory(name: string): Promise<SharedMemory> }>;
    if (!mailbox.memory)
      return Promise.reject(
        new QueueflowError('INVALID_OPTION', `memory: shared memory lives in an engine's store; flow.run has none`, {
          retryable: false,
        }),
      );
    return mailbox.memory(name);
  }

  /**
   * Hands work to another agent (README "Agents", handoffs).
   * - `transfer` (default), in an agent's turn: sends `body` to `ref` in this step's commit as the
   *   turn's message handed on (its sender and `replyTo` kept, so the agent that takes it over
   *   answers the original asker; this agent is added to its `via`), and the turn ends with this
   *   step whatever action `post` returns. Resolves `undefined`.
   * - `delegate`: asks `ref` and waits (parked, holding no worker) for its answer, which it
   *   resolves; `undefined` after `timeoutMs` milliseconds (default: waits as long as it takes).
   *
   * @throws TypeError (code `INVALID_ARGUMENT`) for `transfer` outside an agent's turn or on
   *   `flow.run`; QueueflowError `INVALID_OPTION` for a `ref` that is no agent address or an unknown mode.
   */
  async handoff(
    ref: string,
    body: Json,
    options: { mode?: 'transfer' | 'delegate'; timeoutMs?: number } = {},
  ): Promise<Message | undefined> {
    checkAgentRef('handoff', ref);
    const mode = options.mode ?? 'transfer';
    if (mode === 'delegate')
      return this.ask(ref, body, options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs });
    if (mode !== 'transfer')
      throw new QueueflowError(
        'INVALID_OPTION',
        `handoff: expected \`mode\` 'transfer' or 'delegate', got ${JSON.stringify(mode)}`,
        {
          retryable: false,
        },
      );
    await turnMailboxOf(this, 'handoff').transfer(ref, body);
    return undefined;
  }

  /**
   * In an agent's turn: sets reminder `name`, a message with `reminder: name` and `options.body`
   * that the agent gets later (`afterMs` from now or `at`, on the store's clock; `every` ms
   * again until cancelled). A reminder of the same name is replaced. It is set when this step
   * commits, and lasts across turns, worker deaths and Redis restarts (with persistence). Missed
   * ticks after an outage are delivered once or skipped (`missed`), never one by one.
   * @throws TypeError (code `INVALID_ARGUMENT`) outside an agent's turn; QueueflowError
   *   `INVALID_OPTION` for a bad name (1 to 100 letters, digits, `_ . : -`) or option.
   */
  remind(name: string, options: ReminderOptions): void {
    turnMailboxOf(this, 'remind').remind(name, options);
  }

  /** In an agent's turn: cancels reminder `name` when this step commits (none of that name: nothing). */
  cancelReminder(name: string): void {
    turnMailboxOf(this, 'cancelReminder').cancelReminder(name);
  }

  /** Answers a message received from `ask`. @throws TypeError (code `INVALID_ARGUMENT`) when it has no `replyTo`. */
  reply(message: Message, body: Json): Promise<void> {
    if (!message.replyTo)
      throw new InvalidArgumentError(`reply: message ${message.id} has no replyTo address (it was not sent by ask)`);
    return mailboxOf(this).send(message.replyTo, body);
  }

  /**
   * A shallow copy: same prototype, own fields copied, params copied one level. The successor
   * map is shared with the template, as Python's `copy.copy` does (rule S6).
   */
  clone(): this {
    const copy = Object.create(Object.getPrototypeOf(this) as object) as this;
    Object.assign(copy, this);
    copy._params = { ...this._params };
    return copy;
  }
}

const plainClone = BaseNode.prototype.clone;

/**
 * The copy a runner visits (rule S6), with `params`: an object whose prototype is `template`, so
 * that it reads the template's fields and what the visit sets lands on the copy alone. Per-visit
 * fields never leak into the template, the next visit or a concurrent branch, as with `clone()`,
 * and a visit costs one small object instead of a copy of every field (the hot path of a walk).
 * A subclass that overrides `clone()` gets its own `clone()` instead.
 */
export function visitCopy<T extends BaseNode<any, any>>(template: T, params: object): T {
  if (template.clone !== plainClone) return template.clone().setParams(params);
  return (Object.create(template) as T).setParams(params);
}

/** `flow.run`: hands an entry to the run's `onEmit`, with an id as an engine would give it. */
function emitLocally(run: FlowRunState, node: BaseNode<any, any>, step: number, encoded: string): void {
  const stream = run.stream!;
  const at = Date.now();
  stream.last = at > stream.last.ms ? { ms: at, seq: 0 } : { ms: stream.last.ms, seq: stream.last.seq + 1 };
  stream.onEmit({
    id: `${stream.last.ms}-${stream.last.seq}`,
    step,
    attempt: (node as { currentRetry?: number }).currentRetry ?? 0,
    node: node.name ?? node.constructor.name,
    at,
    data: JSON.parse(encoded) as Json,
  });
}

/** What a turn's step mailbox adds (StepMailbox): handoffs and reminders. */
interface TurnMailbox {
  transfer(ref: string, body: Json): Promise<void>;
  remind(name: string, options: ReminderOptions): void;
  cancelReminder(name: string): void;
}

/** The step mailbox of `node`, which a turn's operations need. @throws TypeError off an engine. */
function turnMailboxOf(node: object, owner: string): TurnMailbox {
  const mailbox = mailboxOf(node) as Partial<TurnMailbox>;
  if (!mailbox.transfer)
    throw new InvalidArgumentError(`${owner}: only an agent's turn can do this, and agents run on an engine`);
  return mailbox as TurnMailbox;
}
