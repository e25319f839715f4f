/**
 * Validation of what a studio request carries: ids, step numbers, paging, JSON bodies. Each
 * check throws a {@link StudioHttpError} 400 naming the input, what was expected and what came.
 */
import type { IncomingMessage } from 'node:http';
import jsonPatch from 'fast-json-patch';
import getRawBody from 'raw-body';
import { parseAgentRef } from '@queueflow/runtime/kernel';
import type { PatchOperation, RunStatus } from './studio-engine.js';
import { StudioHttpError } from './studio-http-error.js';

export const RUN_STATUSES: readonly RunStatus[] = [
  'queued',
  'running',
  'waiting',
  'throttled',
  'completed',
  'failed',
  'cancelled',
];

/** Run ids: letters and digits; a fan-out child's adds `.<step>.<index>`. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

function bad(message: string): StudioHttpError {
  return new StudioHttpError(400, 'BAD_REQUEST', message);
}

function shown(value: unknown): string {
  const text = typeof value === 'string' ? `'${value}'` : JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** A run id from a path or a body. */
export function runIdOf(value: unknown, what = 'run id'): string {
  if (typeof value !== 'string' || !RUN_ID.test(value))
    throw bad(`expected ${what} to be letters and digits (a fan-out child's with dots), got ${shown(value)}`);
  return value;
}

/** A mailbox address: a non-empty string without spaces, at most 1,000 characters. */
export function addressOf(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1000 || /\s/.test(value))
    throw bad(`expected the address to be a non-empty string without spaces, got ${shown(value)}`);
  return value;
}

/** An agent's address, `agent:<type>/<key>` (AgentDefinition.ref). */
export function agentRefOf(value: unknown): string {
  if (typeof value !== 'string' || value.length > 1000 || /\s/.test(value) || !parseAgentRef(value))
    throw bad(`expected \`ref\` to be an agent address 'agent:<type>/<key>', got ${shown(value)}`);
  return value;
}

/** An agent type filter: letters, digits, `_`, `.` or `-`; absent when empty. */
export function agentTypeOf(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^[A-Za-z0-9_.-]{1,200}$/.test(value))
    throw bad(`expected \`type\` to be an agent type (letters, digits, _ . or -), got ${shown(value)}`);
  return value;
}

/** A message id: a non-empty string without spaces, at most 200 characters. */
export function messageIdOf(value: unknown, what = 'messageId'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200 || /\s/.test(value))
    throw bad(`expected \`${what}\` to be a message id (a string without spaces), got ${shown(value)}`);
  return value;
}

/** A conversation id (README "Conversations"): 1 to 200 characters without whitespace. */
export function conversationIdOf(value: unknown, what = 'id'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 200 || /\s/.test(value))
    throw bad(
      `expected \`${what}\` to be a conversation id (1 to 200 characters without whitespace), got ${shown(value)}`,
    );
  return value;
}

/** An RFC 6902 JSON Patch: an array of operations that fast-json-patch's `validate` accepts. */
export function jsonPatchOf(value: unknown, what = 'patch'): PatchOperation[] {
  if (!Array.isArray(value)) throw bad(`expected \`${what}\` to be a JSON Patch (an array), got ${shown(value)}`);
  const problem = jsonPatch.validate(value as PatchOperation[]);
  if (problem) throw bad(`\`${what}\` is not a JSON Patch: ${problem.name}: ${problem.message}`);
  return value as PatchOperation[];
}

/** A whole number from `min` to `max`, from a query string (text) or a JSON body (number). */
export function integerOf(value: unknown, what: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const number = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max)
    throw bad(`expected \`${what}\` to be a whole number from ${min} to ${max}, got ${shown(value)}`);
  return number;
}

/** An optional query parameter as a whole number, `fallback` when absent. */
export function optionalIntegerOf(
  value: string | undefined,
  what: string,
  fallback: number,
  min: number,
  max: number,
): number {
  return value === undefined || value === '' ? fallback : integerOf(value, what, min, max);
}

/** An optional run status filter. */
export function statusOf(value: string | undefined): RunStatus | undefined {
  if (value === undefined || value === '') return undefined;
  if (!(RUN_STATUSES as readonly string[]).includes(value))
    throw bad(`expected \`status\` to be one of ${RUN_STATUSES.join(', ')}, got ${shown(value)}`);
  return value as RunStatus;
}

/** An optional flow name filter (names are free text, at most 200 characters). */
export function flowOf(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (value.length > 200) throw bad(`expected \`flow\` to be a flow name of at most 200 characters`);
  return value;
}

/** A JSON object (not an array, not null). */
export function objectOf(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw bad(`expected ${what} to be a JSON object, got ${shown(value)}`);
  return value as Record<string, unknown>;
}

/**
 * The request's JSON body (`{}` when empty), at most `limitBytes`: 415 unless it says `application/json` (which
 * also keeps other sites' plain forms out: they cannot send that type without a CORS preflight,
 * which the studio never allows), 413 past the limit, 400 for bad JSON. A body that a framework
 * already parsed (Express's `express.json()`) is taken as it is. Either is refused (400) when nested
 * deeper than {@link MAX_BODY_DEPTH} levels.
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json')
    throw new StudioHttpError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      `expected a JSON body (Content-Type: application/json), got ${type ? `'${type}'` : 'none'}`,
    );
  const parsed = (req as { body?: unknown }).body;
  if (parsed !== undefined && !Buffer.isBuffer(parsed) && typeof parsed !== 'string') {
    checkDepth(parsed);
    return parsed;
  }
  let text: string;
  try {
    text = await getRawBody(req, { limit: limitBytes, encoding: 'utf8' });
  } catch (error) {
    if ((error as { type?: string }).type === 'entity.too.large')
      throw new StudioHttpError(413, 'PAYLOAD_TOO_LARGE', `the body is over the limit of ${limitBytes} bytes`);
    throw bad(`could not read the body: ${(error as Error).message}`);
  }
  if (text.trim() === '') return {};
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch (error) {
    throw bad(`the body is not JSON: ${(error as Error).message}`);
  }
  checkDepth(body);
  return body;
}

/**
 * Deepest nesting of arrays and objects a body may have. The checks after this one (JSON Patch
 * validation, `compare`, the engine's JSON check, `structuredClone`) recurse, and a body a few
 * thousand levels deep would overflow their stack: a 500 instead of a 400.
 */
const MAX_BODY_DEPTH = 256;

/** Refuses a value nested deeper than {@link MAX_BODY_DEPTH}, walked without recursion. */
function checkDepth(value: unknown): void {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (item === null || typeof item !== 'object') continue;
    if (depth >= MAX_BODY_DEPTH) throw bad(`the body is nested deeper than ${MAX_BODY_DEPTH} levels`);
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
}
