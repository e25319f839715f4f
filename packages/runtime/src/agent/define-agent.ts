import type { BaseNode } from '../core/base-node.js';
import { invalidOption } from '../core/validate-options.js';
import { checkWellFormed } from '../core/well-formed.js';
import { QueueflowError } from '../errors/queueflow-error.js';
import { defineFlow, isFlowName, type FlowDefinition } from '../interpreter/flow-definition.js';
import { assertJson, type Json, type JsonObject } from '../json/json.js';

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
  /** Most messages a key's inbox holds; a send past it is refused (`MAILBOX_FULL`). @defaultValue unbounded */
  capacity?: number;
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

/** What every agent address starts with. */
export const AGENT_REF_PREFIX = 'agent:';

/** What the name of an agent type's turn flow starts with. */
export const AGENT_FLOW_PREFIX = 'agent.';

/** Longest agent key, in characters. */
const MAX_AGENT_KEY = 256;

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
  const known = ['state', 'turn', 'queries', 'version', 'migrate', 'idleTtlMs', 'capacity'];
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
  checkPositiveInteger(owner, 'version', options.version);
  checkPositiveInteger(owner, 'capacity', options.capacity);
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

/**
 * The address of agent `key` of type `type`.
 * @throws TypeError (via QueueflowError `INVALID_OPTION`) for a key that is empty, longer than
 *   {@link MAX_AGENT_KEY}, holds whitespace or is not well-formed Unicode.
 */
function agentRef(type: string, key: string): string {
  if (typeof key !== 'string' || key === '' || key.length > MAX_AGENT_KEY || /\s/.test(key))
    throw new QueueflowError(
      'INVALID_OPTION',
      `agent '${type}': expected \`key\` to be 1 to ${MAX_AGENT_KEY} characters without whitespace, got ${typeof key === 'string' ? JSON.stringify(key.slice(0, 80)) : typeof key}`,
      { retryable: false },
    );
  checkWellFormed(`agent '${type}'`, 'key', key);
  return `${AGENT_REF_PREFIX}${type}/${key}`;
}

/** The type and key of an agent address, or `undefined` for an address that names no agent. */
export function parseAgentRef(address: string): { type: string; key: string } | undefined {
  if (!address.startsWith(AGENT_REF_PREFIX)) return undefined;
  const slash = address.indexOf('/', AGENT_REF_PREFIX.length);
  if (slash === -1) return undefined;
  const type = address.slice(AGENT_REF_PREFIX.length, slash);
  const key = address.slice(slash + 1);
  return isFlowName(type) && key !== '' ? { type, key } : undefined;
}

/**
 * The agent address `ref` names, checked.
 * @throws QueueflowError `INVALID_OPTION` naming the call and the value.
 */
export function checkAgentRef(owner: string, ref: unknown): { type: string; key: string } {
  const parsed = typeof ref === 'string' ? parseAgentRef(ref) : undefined;
  if (!parsed)
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected an agent address 'agent:<type>/<key>' (AgentDefinition.ref), got ${typeof ref === 'string' ? JSON.stringify(ref.slice(0, 80)) : typeof ref}`,
      { retryable: false },
    );
  checkWellFormed(owner, 'ref', ref as string);
  return parsed;
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
