import type { BaseNode } from '../core/base-node.js';
import { invalidOption } from '../core/validate-options.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import { defineFlow, isFlowName, type FlowDefinition } from '../interpreter/flow-definition.js';
import { assertJson, type Json, type JsonObject } from '../json/json.js';
import { checkTopic } from '../mailbox/topic.js';
import { agentRef } from './agent-ref.js';

export { AGENT_REF_PREFIX, parseAgentRef, checkAgentRef } from './agent-ref.js';

/**
 * How an agent type is made (see {@link defineAgent}). `S` is the agent's state: the `shared`
 * store of each of its turns.
 */
export interface AgentOptions<S extends object = JsonObject> {
  /** The state of a key's first activation (a fresh object each call). */
  state: () => S;
  /**
   * The flow of one turn: built like a flow's root node (a `Flow`, `AsyncFlow` or a single
   * node). Its `shared` is the agent's state; `this.message` is the message it handles.
   */
  turn: () => BaseNode<any, any>;
  /**
   * Read-only views of the last committed state, run by `engine.query(ref, name, arg)` without
   * taking a turn. They must not change `state`.
   */
  queries?: Record<string, (state: S, arg?: Json) => unknown>;
  /**
   * The state's version. A key whose stored state has another version is migrated at its next
   * turn with `migrate`. @defaultValue 1
   */
  version?: number;
  /** Upgrades a stored state of version `fromVersion` to `version` (at the key's next turn). */
  migrate?: (state: JsonObject, fromVersion: number) => S;
  /**
   * A key idle this long (no turn running, its inbox empty) is deleted: its state, its dead
   * letters and its turn history. In milliseconds. @defaultValue kept for ever
   */
  idleTtlMs?: number;
  /**
   * Most messages a key's inbox holds; a send past it is refused (`MAILBOX_FULL`), and a publish
   * skips the key. Checked where the sending process knows this type (engines and workers given
   * it), when the send is made: senders racing to the last free place can overshoot by their
   * number. @defaultValue unbounded
   */
  capacity?: number;
  /**
   * What a send to a full inbox does:
   * - `'reject'`: `engine.send` rejects, and a step's `this.send`, `this.ask` or `this.handoff`
   *   throws, with `MAILBOX_FULL` (retryable: the node's retries and backoff apply);
   * - `'park'`: `engine.send` rejects as for `'reject'` (it has no run to park); a step's send
   *   parks its run (status `waiting`, no worker slot held), which looks again every 250 ms and
   *   sends once there is room. Two agents each parked on the other's full inbox wait for good.
   * @defaultValue 'reject'
   */
  onFull?: 'reject' | 'park';
  /**
   * Topics this type subscribes to, each with the key (or keys) a published body goes to:
   * `{ 'mail.classified': (body) => body.thread }`. `undefined` or `[]`: no key of this type
   * gets that body. Only engines and workers given this type deliver to it.
   */
  subscribe?: Record<string, (body: Json) => string | readonly string[] | undefined>;
}

/**
 * An agent type: keyed, durable virtual actors (Dapr's virtual actors, Orleans' grains, Restate's
 * Virtual Objects) whose turns are runs of a flow. Made by {@link defineAgent}; given to engines
 * and workers beside flows (`agents: [...]`).
 */
export interface AgentDefinition<S extends object = JsonObject> {
  readonly type: string;
  /** The address of the agent `key` of this type: `agent:<type>/<key>`. */
  ref(key: string): string;
  /** The flow each turn runs (named `agent.<type>`). */
  readonly flow: FlowDefinition;
  readonly options: Readonly<AgentOptions<S>>;
}

/** What the name of an agent type's turn flow starts with. */
export const AGENT_FLOW_PREFIX = 'agent.';

const BRAND = Symbol.for('queueflow.agent');

/**
 * Defines an agent type.
 *
 * @param type - letters, digits, `_`, `.` or `-`.
 * @example
 * ```ts
 * const counter = defineAgent('counter', {
 *   state: () => ({ count: 0 }),
 *   turn: () => new Count(),      // a node or flow; `shared` is the state, `this.message` the message
 *   queries: { count: (state) => state.count },
 * });
 * await engine.send(counter.ref('alice'), { add: 2 });
 * ```
 * @throws TypeError naming the bad option.
 */
export function defineAgent<S extends object = JsonObject>(type: string, options: AgentOptions<S>): AgentDefinition<S> {
  if (!isFlowName(type)) throw invalidOption('defineAgent', 'type', 'a string of letters, digits, _ . or -', type);
  if (typeof options !== 'object' || options === null)
    throw invalidOption(`defineAgent('${type}')`, 'options', 'an object with `state` and `turn`', options);
  const owner = `defineAgent('${type}')`;
  const known = ['state', 'turn', 'queries', 'version', 'migrate', 'idleTtlMs', 'capacity', 'onFull', 'subscribe'];
  for (const name of Object.keys(options))
    if (!known.includes(name))
      throw new QueueflowError('INVALID_OPTION', `${owner}: unknown option '${name}'; known: ${known.join(', ')}`, {
        retryable: false,
      });
  if (typeof options.state !== 'function')
    throw invalidOption(owner, 'state', 'a function returning the first state', options.state);
  if (typeof options.turn !== 'function')
    throw invalidOption(owner, 'turn', 'a function returning a node or flow', options.turn);
  if (options.queries !== undefined) {
    if (typeof options.queries !== 'object' || options.queries === null)
      throw invalidOption(owner, 'queries', 'an object of functions', options.queries);
    for (const [name, query] of Object.entries(options.queries))
      if (typeof query !== 'function') throw invalidOption(owner, `queries.${name}`, 'a function', query);
  }
  if (options.subscribe !== undefined) {
    if (typeof options.subscribe !== 'object' || options.subscribe === null)
      throw invalidOption(owner, 'subscribe', 'an object of topic → (body) => key', options.subscribe);
    for (const [topic, keyOf] of Object.entries(options.subscribe)) {
      checkTopic(`${owner}: subscribe`, topic);
      if (typeof keyOf !== 'function')
        throw invalidOption(owner, `subscribe['${topic}']`, 'a function (body) => key', keyOf);
    }
  }
  checkPositiveInteger(owner, 'version', options.version);
  checkPositiveInteger(owner, 'capacity', options.capacity);
  if (options.onFull !== undefined && options.onFull !== 'reject' && options.onFull !== 'park')
    throw invalidOption(owner, 'onFull', "'reject' or 'park'", options.onFull);
  if (options.idleTtlMs !== undefined && !(Number.isFinite(options.idleTtlMs) && options.idleTtlMs > 0))
    throw invalidOption(owner, 'idleTtlMs', 'a positive number of milliseconds', options.idleTtlMs);
  if (options.migrate !== undefined && typeof options.migrate !== 'function')
    throw invalidOption(owner, 'migrate', 'a function (state, fromVersion) => state', options.migrate);
  const flow = defineFlow(`${AGENT_FLOW_PREFIX}${type}`, options.turn);
  const definition: AgentDefinition<S> = {
    type,
    ref: (key) => agentRef(type, key),
    flow,
    options: Object.freeze({ ...options }),
  };
  Object.defineProperty(definition, BRAND, { value: true });
  return Object.freeze(definition);
}

function checkPositiveInteger(owner: string, option: string, value: unknown): void {
  if (value !== undefined && !(typeof value === 'number' && Number.isInteger(value) && value >= 1))
    throw invalidOption(owner, option, 'an integer from 1 and up', value);
}

/** Whether `value` is an {@link AgentDefinition} (a module's exports hold flows and agents). */
export function isAgentDefinition(value: unknown): value is AgentDefinition<any> {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** A fresh first state of `definition`, checked to survive JSON. @throws QueueflowError `NOT_JSON`. */
export function firstState(definition: AgentDefinition<any>): JsonObject {
  const state = definition.options.state() as unknown;
  assertJson(state, `the first state of agent type '${definition.type}'`);
  if (typeof state !== 'object' || state === null || Array.isArray(state))
    throw new QueueflowError('INVALID_OPTION', `agent type '${definition.type}': state() must return an object`, {
      retryable: false,
    });
  return state as JsonObject;
}
