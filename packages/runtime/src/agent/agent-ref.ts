import { QueueflowError } from '../errors/queueflow-error.js';
import { checkWellFormed } from '../core/well-formed.js';

/**
 * Agent addresses, `agent:<type>/<key>`: made, parsed and checked here, apart from
 * define-agent.ts, so that node code (base-node.ts) can check one without importing flows.
 */

/** What every agent address starts with. */
export const AGENT_REF_PREFIX = 'agent:';

/** Longest agent key, in characters. */
const MAX_AGENT_KEY = 256;

/** An agent type's name: as a flow's (letters, digits, `_ . -`). */
const AGENT_TYPE = /^[A-Za-z0-9_.-]+$/;

/**
 * The address of agent `key` of type `type`.
 * @throws TypeError (via QueueflowError `INVALID_OPTION`) for a key that is empty, longer than
 *   {@link MAX_AGENT_KEY}, holds whitespace or is not well-formed Unicode.
 */
export function agentRef(type: string, key: string): string {
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
  return AGENT_TYPE.test(type) && key !== '' ? { type, key } : undefined;
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
