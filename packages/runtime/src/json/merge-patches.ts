import jsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import type { Json, JsonObject } from './json.js';

export type { Operation as PatchOperation };

/** Two fan-out children wrote the same path; the later (in parameter-set order) won. */
export interface MergeConflict {
  /** JSON Pointer (RFC 6901) of the path both wrote, e.g. `/results/total`. */
  path: string;
  /** Indices of the parameter sets, in the order their writes applied. */
  children: number[];
}

/**
 * The JSON Patch (RFC 6902) that turns `before` into `after`, in a form that merges: a new
 * object or array is added empty and then filled member by member, and appends to an array
 * become `add …/-`. So children that each create `shared.results` and write their own key, or
 * append to the same list, all keep their writes.
 */
export function diffShared(before: JsonObject, after: JsonObject): Operation[] {
  const operations: Operation[] = [];
  for (const operation of jsonPatch.compare(before, after)) {
    if (operation.op !== 'add') {
      operations.push(operation);
      continue;
    }
    const slash = operation.path.lastIndexOf('/');
    const index = Number(operation.path.slice(slash + 1));
    const parentPath = operation.path.slice(0, slash);
    const parent = parentPath === '' ? before : (jsonPatch.getValueByPointer(before, parentPath) as unknown);
    const appended = Array.isArray(parent) && Number.isInteger(index) && index >= parent.length;
    explode(appended ? `${parentPath}/-` : operation.path, operation.value as Json, operations);
  }
  return operations;
}

/** Adds `value` at `path` as container creation plus member adds. */
function explode(path: string, value: Json, out: Operation[]): void {
  if (Array.isArray(value)) {
    out.push({ op: 'add', path, value: [] });
    const itemsPath = path.endsWith('/-') ? undefined : `${path}/-`;
    // An array appended as an item stays whole: `…/-/-` would not address it.
    if (!itemsPath) out[out.length - 1] = { op: 'add', path, value };
    else for (const item of value) out.push({ op: 'add', path: itemsPath, value: item });
    return;
  }
  if (value !== null && typeof value === 'object' && !path.endsWith('/-')) {
    out.push({ op: 'add', path, value: {} });
    for (const [key, member] of Object.entries(value))
      explode(`${path}/${jsonPatch.escapePathComponent(key)}`, member, out);
    return;
  }
  out.push({ op: 'add', path, value });
}

/**
 * Applies children's patches to `shared` in parameter-set order and lists the paths that more
 * than one child wrote (a path conflicts with another when one is equal to or inside the other).
 * Appends (`…/-`) never conflict, and adding an empty object or array where one already is
 * (a container two children both created) merges instead of replacing.
 *
 * @param patches - one patch per child, index = parameter-set index; `undefined` = no change.
 * @returns the merged object (a new object; `shared` is not modified) and the conflicts.
 */
export function mergePatches(
  shared: JsonObject,
  patches: ReadonlyArray<readonly Operation[] | undefined>,
): { shared: JsonObject; conflicts: MergeConflict[] } {
  const writers = new PathWriters();
  let document = jsonPatch.deepClone(shared) as JsonObject;
  patches.forEach((patch, child) => {
    for (const operation of patch ?? []) {
      if (isContainerCreation(operation) && holdsSameContainer(document, operation)) continue;
      if (!operation.path.endsWith('/-') && !isContainerCreation(operation)) writers.write(operation.path, child);
      // `document` is our own deep copy: operations may mutate it in place.
      document = jsonPatch.applyOperation(document, operation, false, true, true).newDocument as JsonObject;
    }
  });
  return { shared: document, conflicts: writers.conflicts() };
}

function isContainerCreation(operation: Operation): boolean {
  if (operation.op !== 'add') return false;
  const value = operation.value as unknown;
  return (Array.isArray(value) && value.length === 0) || (isPlainObject(value) && Object.keys(value).length === 0);
}

function holdsSameContainer(document: JsonObject, operation: Operation): boolean {
  let current: unknown;
  try {
    current = jsonPatch.getValueByPointer(document, operation.path);
  } catch {
    return false;
  }
  const value = (operation as { value: unknown }).value;
  return Array.isArray(value) ? Array.isArray(current) : isPlainObject(current);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Which children wrote which paths, as a trie of path segments. A path conflicts when a child
 * wrote it and another child wrote it too or wrote a path inside it; the conflict lists every child
 * that wrote there, in the order they wrote (param-set order). Each write updates the nodes along
 * its path once (sets, not lists), so recording n writes costs O(n × depth), whatever paths they
 * share: 8,000 children writing one key is linear, not quadratic.
 */
class PathWriters {
  private readonly root: TrieNode = newNode('');
  /** Nodes in the order each first came to hold a conflict (the order conflicts are reported in). */
  private readonly conflicted: TrieNode[] = [];

  write(path: string, child: number): void {
    const segments = path.split('/').slice(1);
    const trail: TrieNode[] = [this.root];
    let node = this.root;
    for (const segment of segments) {
      let next = node.children.get(segment);
      if (!next) {
        next = newNode(node === this.root ? `/${segment}` : `${node.path}/${segment}`);
        node.children.set(segment, next);
      }
      trail.push(next);
      node = next;
    }
    node.writers.add(child);
    // Every node on the way sees the write as its own (the last) or as one inside it.
    for (const on of trail) {
      on.involved.add(child);
      if (!on.reported && on.writers.size > 0 && on.involved.size > 1) {
        on.reported = true;
        this.conflicted.push(on);
      }
    }
  }

  conflicts(): MergeConflict[] {
    return this.conflicted.map((node) => ({ path: node.path, children: [...node.involved].sort((a, b) => a - b) }));
  }
}

interface TrieNode {
  path: string;
  children: Map<string, TrieNode>;
  /** Children that wrote exactly this path. */
  writers: Set<number>;
  /** Children that wrote this path or a path inside it. */
  involved: Set<number>;
  reported: boolean;
}

function newNode(path: string): TrieNode {
  return { path, children: new Map(), writers: new Set(), involved: new Set(), reported: false };
}
