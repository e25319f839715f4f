import jsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import { QueueflowError } from '../errors/queueflow-error.js';
import { assertJson, jsonCopy, type Json } from '../json/json.js';
import { checkWellFormed } from '../core/well-formed.js';
import { checkOptionNames } from '../core/check-option-names.js';
import { checkMessageBody } from '../mailbox/message.js';

/**
 * Shared memory (README "Conversations", `this.memory`): named JSON documents that agents and
 * runs share, versioned. A step reads one, stages JSON Patch updates, and they are written with
 * the step: after its code has run, before its commit. Each update has an id made of the run, the
 * step, the try and its order in the step, so a step run again after a crash writes it once. An update
 * made `ifVersion` a version that is no longer the latest fails with `MEMORY_CONFLICT`.
 */

/** One JSON Patch operation (RFC 6902), as fast-json-patch takes it. */
export type MemoryPatch = Operation[];

/** A named memory as read: its document and version (0 and `{}` before its first update). */
export interface StoredMemory {
  value: Json;
  version: number;
}

/** One update of a memory, as its history keeps it. */
export interface MemoryChange {
  /** The version it made. */
  version: number;
  /** The update's id: `<run id>.<step>.<try>.m<n>`. */
  id: string;
  /** Who wrote it: an agent's address in a turn, else the run's id. */
  writer: string;
  /** Epoch ms. */
  at: number;
  patch: MemoryPatch;
}

/** `engine.memory(name)`: a memory now, with its latest changes (newest last). */
export interface MemoryInfo extends StoredMemory {
  name: string;
  /** Its latest changes, oldest first; at most 1,000 are kept. */
  history: MemoryChange[];
}

/** A write the store applies when the memory is still at `base` (compare-and-set). */
export interface MemoryWrite {
  change: MemoryChange;
  /** The document after the patch. */
  value: Json;
  /** The version the patch was applied to. */
  base: number;
  /** The version the writer required (`update(patch, { ifVersion })`). */
  ifVersion?: number | undefined;
}

/**
 * `applied`; `already` (this update's id was written before: a step run again); `moved` (another
 * update came after `base`: apply the patch to the new version); `conflict` (`ifVersion` is stale).
 */
export type MemoryWriteReply = { result: 'applied' | 'already' | 'moved' | 'conflict'; version: number };

/** Where named memories live: the engine's store (memory, or Redis beside the runs). */
export interface SharedMemoryStore {
  read(name: string): Promise<StoredMemory>;
  write(name: string, write: MemoryWrite): Promise<MemoryWriteReply>;
  /** The kept changes after version `after` (all kept when 0), oldest first. */
  history(name: string, after: number): Promise<MemoryChange[]>;
}

/** Changes kept per memory (its history); older ones are trimmed. Update ids are kept as long. */
export const MAX_MEMORY_HISTORY = 1000;

/** Longest memory name, in characters. */
const MAX_NAME_LENGTH = 200;

/**
 * Checks a memory name: 1–200 characters, no whitespace.
 * @throws QueueflowError `INVALID_OPTION` naming the bad value.
 */
export function checkMemoryName(owner: string, name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME_LENGTH || /\s/.test(name))
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected a memory name of 1 to ${MAX_NAME_LENGTH} characters without whitespace, got ${JSON.stringify(name) ?? String(name)}`,
      { retryable: false },
    );
  return checkWellFormed(owner, 'name', name);
}

/** Applies `patch` to a copy of `value`. @throws QueueflowError `INVALID_OPTION` for a bad patch, naming the operation. */
export function patched(owner: string, value: Json, patch: unknown): Json {
  if (!Array.isArray(patch))
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected a JSON Patch (an array of operations), got ${typeof patch}`,
      {
        retryable: false,
      },
    );
  assertJson(patch, `${owner}: the patch`);
  try {
    return jsonPatch.applyPatch(jsonCopy(value), patch as Operation[], true, true).newDocument as Json;
  } catch (error) {
    const at = (error as { index?: number }).index;
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: the patch does not apply${at === undefined ? '' : ` at operation ${at} (${JSON.stringify(patch[at])})`}: ${(error as Error).message.split('\n')[0]}`,
      { retryable: false, cause: error },
    );
  }
}

/** The paths a patch writes (`path`, and `from` of a move). */
function pathsOf(patch: MemoryPatch): string[] {
  return patch.flatMap((op) => (op.op === 'move' ? [op.from, op.path] : op.op === 'test' ? [] : [op.path]));
}

/** Two JSON Pointers overlap when one is the other or holds it. */
function overlaps(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`) || a === '' || b === '';
}

/**
 * The `MEMORY_CONFLICT` error of an update of `name` made `ifVersion` a version that is no longer
 * the latest: names the paths both wrote (else every path written since) and the writer that won.
 */
export async function memoryConflict(
  store: SharedMemoryStore,
  name: string,
  patch: MemoryPatch,
  ifVersion: number,
  version: number,
): Promise<QueueflowError> {
  const since = await store.history(name, ifVersion);
  const written = [...new Set(since.flatMap((change) => pathsOf(change.patch)))];
  const mine = pathsOf(patch);
  const both = written.filter((path) => mine.some((other) => overlaps(path, other)));
  if (ifVersion > version)
    return new QueueflowError(
      'MEMORY_CONFLICT',
      `memory '${name}': the update was made on version ${ifVersion}, but there is no such version yet (the latest is ${version}): read it again and update that version`,
    );
  const winner = since.at(-1)?.writer ?? 'an update no longer in its history';
  const paths = (both.length > 0 ? both : written).map((path) => path || '/');
  return new QueueflowError(
    'MEMORY_CONFLICT',
    `memory '${name}': the update was made on version ${ifVersion}, but it is at version ${version} now, written by ${winner}` +
      (paths.length > 0 ? ` (${both.length > 0 ? 'both wrote' : 'it wrote'} ${paths.join(', ')})` : '') +
      ': read it again and update that version',
  );
}

/**
 * Writes one update: the patch is applied to the latest version (read again while others write
 * in between), unless `ifVersion` is given and is no longer the latest.
 * @throws QueueflowError `MEMORY_CONFLICT` (see {@link memoryConflict}); `INVALID_OPTION` when the
 *   patch no longer applies to the latest version.
 */
export async function writeMemory(
  store: SharedMemoryStore,
  name: string,
  change: MemoryChange,
  ifVersion: number | undefined,
): Promise<number> {
  for (;;) {
    const current = await store.read(name);
    const value = patched(`memory '${name}'`, current.value, change.patch);
    checkMessageBody(value, `memory '${name}' after the update`); // JSON, at most 1 MiB
    const reply = await store.write(name, {
      change: { ...change, version: current.version + 1 },
      value,
      base: current.version,
      ...(ifVersion === undefined ? {} : { ifVersion }),
    });
    if (reply.result === 'applied' || reply.result === 'already') return reply.version;
    if (reply.result === 'conflict') throw await memoryConflict(store, name, change.patch, ifVersion!, reply.version);
  }
}

/** `engine.memory(name)`. @throws QueueflowError `INVALID_OPTION` for a bad name. */
export async function memoryInfo(store: SharedMemoryStore, name: string): Promise<MemoryInfo> {
  checkMemoryName('memory', name);
  const [read, history] = await Promise.all([store.read(name), store.history(name, 0)]);
  return { name, ...read, history };
}

/** `this.memory(name)`: a memory as this step read it, and its updates staged for the step's end. */
export class SharedMemory {
  /** The document with the updates this handle staged (what the next `update` applies to). */
  private pending: Json;

  constructor(
    readonly name: string,
    /** The document, as read with the step's staged updates applied (a copy: changing it changes nothing stored). */
    readonly value: Json,
    /** The version read. */
    readonly version: number,
    private readonly stage: (patch: MemoryPatch, ifVersion: number | undefined) => void,
    private readonly conflict: (patch: MemoryPatch, ifVersion: number) => Promise<QueueflowError>,
  ) {
    this.pending = value;
  }

  /**
   * Stages a JSON Patch (RFC 6902) of this memory: the step's updates of one memory are written
   * together, in order, when the step ends (before its commit), on the latest version. With
   * `ifVersion` (for example `memory.version`) they are written only if that is still the latest.
   * @throws QueueflowError `INVALID_OPTION` when `patch` is not a JSON Patch that applies to the
   *   value read with the updates staged before it, or for a bad option; `MEMORY_CONFLICT` at
   *   once when `ifVersion` is not the version read (and, at the step's end, when another update
   *   came first: the step fails with it).
   */
  async update(patch: MemoryPatch, options: { ifVersion?: number } = {}): Promise<void> {
    const owner = `memory '${this.name}': update`;
    if (typeof options !== 'object' || options === null)
      throw new QueueflowError('INVALID_OPTION', `${owner}: expected options { ifVersion? }, got ${String(options)}`, {
        retryable: false,
      });
    checkOptionNames(owner, options, ['ifVersion']);
    const { ifVersion } = options;
    if (ifVersion !== undefined && (typeof ifVersion !== 'number' || !Number.isSafeInteger(ifVersion) || ifVersion < 0))
      throw new QueueflowError(
        'INVALID_OPTION',
        `${owner}: expected \`ifVersion\` to be a version (an integer ≥ 0), got ${JSON.stringify(ifVersion) ?? String(ifVersion)}`,
        { retryable: false },
      );
    const next = patched(owner, this.pending, patch);
    if (ifVersion !== undefined && ifVersion !== this.version) throw await this.conflict(patch, ifVersion);
    this.pending = next;
    this.stage(jsonCopy(patch as unknown as Json) as unknown as MemoryPatch, ifVersion);
  }
}
