import { BaseNode } from './base-node.js';
import { backoffDelayMs, checkBackoff, type BackoffOptions } from './backoff.js';
import type { MaybePromise, NonIterableObject, ParamsObject } from './types.js';
import { checkMaxRetries, checkOptionalPositiveInteger, checkWaitOptions, invalidOption } from './validate-options.js';
import { InvalidArgumentError, NodeTimeoutError, retryAfterOf } from '../errors/queueflow-error.js';
import { toErrorRecord } from '../errors/error-record.js';
import { budgetOf } from './budget-of.js';
import { mailboxOf } from '../mailbox/mailbox-of.js';
import { checkSpendKey, MAX_SPEND_AMOUNT } from '../agent/spend.js';
import { checkLimits, type Limit } from './limit.js';
import { checkQueueName } from './queue-name.js';
import { warnIfLimitsIgnored } from './warn-limits-ignored.js';
import { checkOptionNames } from './check-option-names.js';

/** Options of {@link Node} beyond PocketFlow's positional `(maxRetries, wait)`. */
export interface NodeOptions {
  /**
   * Total number of tries of `exec`, the first included (PocketFlow's `max_retries`, BullMQ's
   * `attempts`). An integer from 1. @defaultValue 1
   */
  maxRetries?: number;
  /**
   * Pause between tries, in **SECONDS** (PocketFlow's name and unit: `wait: 2` is two seconds,
   * not two milliseconds). Or give {@link NodeOptions.waitMs} instead, in milliseconds; not both.
   * @defaultValue 0 (s)
   */
  wait?: number;
  /**
   * Pause between tries, in **MILLISECONDS**: the same setting as {@link NodeOptions.wait}
   * (seconds), under a name that says its unit like `timeoutMs`. `waitMs: 500` is `wait: 0.5`;
   * the node's `wait` field holds it in seconds.
   * @defaultValue 0 (ms)
   * @throws TypeError when given together with `wait`.
   */
  waitMs?: number;
  /** Backoff shape between tries. @defaultValue `{ type: 'fixed' }` */
  backoff?: BackoffOptions;
  /** Limit of one try of `exec`, in milliseconds; a try over time fails. @defaultValue none */
  timeoutMs?: number;
  /** Stable node name, used as its id by the engines. */
  name?: string;
  /**
   * Budgets every try of `exec` draws from, shared by every node naming the same key, across all
   * workers (flow control: see {@link Limit}). Enforced by the engines (LocalEngine, RedisEngine);
   * `flow.run` ignores them. @defaultValue none
   * @throws TypeError naming the bad limit (`limits[1].rate.perMs`), what was expected and what was received.
   */
  limits?: Limit[];
  /**
   * The queue whose workers run this node's steps (and, for a ParallelBatchNode, its items):
   * on RedisEngine a step of a node with `queue: 'llm'` runs only on workers started with
   * `queues` including `'llm'` (`queueflow worker --queues default,llm`). LocalEngine and
   * `flow.run` accept any name and run every queue in this process. 1 to 64 letters, digits, `_`,
   * `-` or `.`, starting with a letter or digit.
   * @defaultValue `'default'`
   * @throws TypeError for a name that breaks those rules.
   */
  queue?: string;
}

/**
 * A node whose `exec` is retried: up to `maxRetries` tries in all, `wait` **seconds** apart (not
 * after the last), then `execFallback(prepRes, lastError)` once (rules S2, S3). The options
 * object also takes the pause in milliseconds: `new Node({ maxRetries: 3, waitMs: 500 })`.
 *
 * Inside `exec`, `this.currentRetry` is the 0-based index of the running try and `this.signal`
 * aborts when the try times out or the node's batch is abandoned.
 *
 * @example
 * ```ts
 * class Summarise extends Node<{ text: string; summary?: string }> {
 *   constructor() { super(3, 0.5); }              // 3 tries, 0.5 s apart
 *   override prep(shared) { return shared.text; }
 *   override async exec(text: string) { return callModel(text); }
 *   override execFallback() { return '(no summary)'; }
 *   override post(shared, _p, summary: string) { shared.summary = summary; }
 * }
 * ```
 * @throws TypeError when `maxRetries` is not an integer ≥ 1, `wait` or `waitMs` is not a finite
 *   number ≥ 0, or both `wait` and `waitMs` are given; QueueflowError `INVALID_OPTION` for an
 *   option name it does not take (see {@link Node.optionNames}).
 * @see PocketFlow `Node` (Python reference): `max_retries` counts every try.
 */
export class Node<S = unknown, P extends ParamsObject = NonIterableObject> extends BaseNode<S, P> {
  /**
   * The option names the constructor takes ({@link NodeOptions}); any other name in an options
   * object is refused (`INVALID_OPTION`, "did you mean 'limits'?"). A subclass whose constructor
   * passes options of its own on to `super` adds their names:
   * `static override optionNames = [...Node.optionNames, 'model']`.
   */
  static optionNames: readonly string[] = [
    'maxRetries',
    'wait',
    'waitMs',
    'backoff',
    'timeoutMs',
    'name',
    'limits',
    'queue',
  ];

  /** Total tries of `exec`, first included. */
  maxRetries: number;
  /** Pause between tries, in **seconds** (PocketFlow's unit; the `waitMs` option sets it in milliseconds). */
  wait: number;
  /** 0-based index of the running try, readable inside `exec`. */
  currentRetry = 0;
  // Optional fields are `declare`d and set only when used: every own field is copied at every
  // visit (clone), which is the hot path of a flow.
  /** Backoff shape between tries; unset means fixed `wait`. */
  declare backoff: BackoffOptions | undefined;
  /** Limit of one try of `exec`, in milliseconds; unset means none. */
  declare timeoutMs: number | undefined;
  /** The queue whose workers run this node's steps; unset means `'default'` (see {@link NodeOptions.queue}). */
  declare queue: string | undefined;
  /** Aborts when the running try is abandoned (timeout, failed sibling, cancelled run). */
  declare signal: AbortSignal | undefined;
  /** Budgets every try of `exec` draws from (flow control); unset means none. */
  declare limits: Limit[] | undefined;

  constructor(maxRetries?: number, wait?: number);
  constructor(options?: NodeOptions);
  constructor(maxRetriesOrOptions: number | NodeOptions = 1, wait = 0) {
    super();
    const owner = new.target.name;
    const options: NodeOptions =
      typeof maxRetriesOrOptions === 'object' && maxRetriesOrOptions !== null
        ? maxRetriesOrOptions
        : { maxRetries: maxRetriesOrOptions, wait };
    if (options === maxRetriesOrOptions) checkOptionNames(owner, options, (new.target as typeof Node).optionNames);
    this.maxRetries = checkMaxRetries(owner, options.maxRetries ?? 1);
    this.wait = checkWaitOptions(owner, options);
    const backoff = checkBackoff(owner, options.backoff);
    if (backoff) this.backoff = backoff;
    const timeoutMs = checkOptionalPositiveInteger(owner, 'timeoutMs', options.timeoutMs);
    if (timeoutMs !== undefined) this.timeoutMs = timeoutMs;
    if (options.name !== undefined && (typeof options.name !== 'string' || options.name === '')) {
      throw invalidOption(owner, 'name', 'a non-empty string', options.name);
    }
    if (options.name !== undefined) this.name = options.name;
    const limits = checkLimits(owner, options.limits);
    if (limits) this.limits = limits;
    if (options.queue !== undefined) this.queue = checkQueueName(owner, 'queue', options.queue);
  }

  /**
   * From a step of this node (usually `exec`, after a model call): reports what this try really
   * took of `key` (tokens, dollars), to two places:
   * - a key of this visit's `limits`: the try's take from `key`'s rate (the token count of the
   *   provider's reply, when the limit's `cost` only estimated it; it replaces the estimate), so
   *   that later admissions see the corrected window;
   * - in an agent's turn of a conversation (README "Conversations"), any key: added to what the
   *   agent spent there (`engine.conversation(id).spend`) and counted against the budget's
   *   `cost: { key, max }`. The spend that goes past `max` ends the conversation and cancels its
   *   running turns, this one among them. A try that fails after spending has spent: it stays counted.
   * Resolves once the store has it; a no-op on `flow.run` (neither budgets nor conversations there).
   *
   * @param key - what was spent: a key of this visit's `limits`, or (in a conversation) any key of
   *   1 to 200 characters.
   * @param units - units taken, a finite number from 0 to Number.MAX_SAFE_INTEGER.
   * @throws TypeError (code `INVALID_ARGUMENT`), synchronously: bad units, or, in a node with
   *   `limits` outside a conversation, a key not among them (a node without limits outside a
   *   conversation counts nothing, whatever the key); QueueflowError `INVALID_OPTION`, synchronously
   *   too, for a bad conversation key. The promise rejects with `CONVERSATION_BUDGET` naming the
   *   limit when the conversation has ended.
   * @example
   * ```ts
   * const reply = await model.chat(prompt);
   * await this.spend('openai-tokens', reply.usage.total_tokens);
   * ```
   */
  spend(key: string, units: number): Promise<void> {
    if (typeof units !== 'number' || !Number.isFinite(units) || units < 0 || units > MAX_SPEND_AMOUNT) {
      throw new InvalidArgumentError(
        `spend: expected \`units\` to be a finite number from 0 to ${MAX_SPEND_AMOUNT}, got \`${String(units)}\` (${typeof units})`,
      );
    }
    const attached = budgetOf(this);
    const conversation = (mailboxOf(this) as { conversationSpend?: (key: string, units: number) => Promise<void> })
      .conversationSpend;
    const limited = attached?.keys.includes(key) === true;
    if (attached && !limited && !conversation) {
      throw new InvalidArgumentError(
        `spend: '${key}' is not a budget key of this visit's limits (${attached.keys.map((k) => `'${k}'`).join(', ')})`,
      );
    }
    if (conversation) checkSpendKey('spend', 'key', key);
    return Promise.all([limited ? attached!.port.spend(key, units) : undefined, conversation?.(key, units)]).then(
      () => undefined,
    );
  }

  /**
   * Runs once after the last failed try; its return value becomes `execRes` for `post`. The
   * default rethrows `error` (rule S3).
   */
  execFallback(_prepRes: unknown, error: Error): MaybePromise<unknown> {
    throw error;
  }

  /** Delay in milliseconds before the try after failed try `failedTry` (0-based). */
  retryDelayMs(failedTry: number): number {
    return backoffDelayMs(failedTry, this.wait, this.backoff);
  }

  /**
   * @internal One try of `exec` on this copy: sets `currentRetry` and `signal`, applies
   * `timeoutMs`. Engines call it once per attempt; `_execWithRetries` loops over it.
   */
  async _tryExec(input: unknown, attempt: number, abort?: AbortSignal): Promise<unknown> {
    this.currentRetry = attempt;
    if (this.timeoutMs === undefined) {
      this.signal = abort;
      return await this.exec(input);
    }
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(abort?.reason);
    abort?.addEventListener('abort', onAbort, { once: true });
    this.signal = controller.signal;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new NodeTimeoutError(this.name ?? this.constructor.name, this.timeoutMs!);
        controller.abort(error);
        reject(error);
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([Promise.resolve().then(() => this.exec(input)), timeout]);
    } finally {
      clearTimeout(timer);
      abort?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * @internal The full retry policy for one input (rules S2, S3): tries, backoff between them,
   * fallback after the last. A non-retryable error (`retryable === false`) skips to the fallback.
   * Runs on `this`, which must be a per-visit (or per-item) copy.
   */
  async _execWithRetries(input: unknown, abort?: AbortSignal): Promise<unknown> {
    // Only flow.run and node.run come here (engines run one try at a time through _tryExec).
    if (this.limits !== undefined) warnIfLimitsIgnored(this, input);
    abort?.throwIfAborted();
    try {
      if (this.timeoutMs === undefined) {
        // The common path, kept free of extra async frames: it is the per-step hot path.
        this.currentRetry = 0;
        if (abort) this.signal = abort;
        return await this.exec(input);
      }
      return await this._tryExec(input, 0, abort);
    } catch (error) {
      return await this._execAfterFailedTry(input, 0, error, abort);
    }
  }

  /**
   * @internal The rest of the retry policy once try `attempt` (0-based) failed with `error`:
   * waits and tries again, or runs `execFallback` after the last try. A `RateLimitedError`
   * waits its `retryAfterMs` and tries again without using up a try.
   */
  async _execAfterFailedTry(input: unknown, attempt: number, error: unknown, abort?: AbortSignal): Promise<unknown> {
    for (;;) {
      const retryAfterMs = retryAfterOf(error);
      if (retryAfterMs !== undefined) {
        await sleep(retryAfterMs, abort);
      } else {
        const last = attempt >= this.maxRetries - 1 || (error as { retryable?: unknown })?.retryable === false;
        if (last) return await this.execFallback(input, asError(error));
        const delayMs = this.retryDelayMs(attempt);
        if (delayMs > 0) await sleep(delayMs, abort);
        attempt++;
      }
      abort?.throwIfAborted();
      try {
        return await this._tryExec(input, attempt, abort);
      } catch (next) {
        error = next;
      }
    }
  }

  override _exec(prepRes: unknown, abort?: AbortSignal): Promise<unknown> {
    return this._execWithRetries(prepRes, abort);
  }
}

/**
 * `error` if it is an Error, else an Error whose `cause` is it and which says what it says (a
 * thrown object's own `message`, `name`, `code` and `retryable: false`, else its JSON:
 * {@link toErrorRecord}).
 */
export function asError(error: unknown): Error {
  if (error instanceof Error) return error;
  const record = toErrorRecord(error);
  const wrapped = Object.assign(new Error(record.message, { cause: error }), {
    code: record.code,
    ...(record.retryable ? {} : { retryable: false }),
  });
  wrapped.name = record.name;
  return wrapped;
}

function sleep(ms: number, abort?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      abort?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abort?.reason);
    };
    abort?.addEventListener('abort', onAbort, { once: true });
  });
}
