import jsonPatch from 'fast-json-patch';
import type { Operation } from 'fast-json-patch';
import type { JsonObject } from './json.js';

export type { Operation as PatchOperation };

/** Two fan-out children wrote the same path; the later (in parameter-set order) won. */
export interface MergeConflict {
  /** JSON Pointer (RFC 6901) of the path both wrote, e.g. `/results/total`. */
  path: string;
  /** Indices of the parameter sets, in the order their writes applied. */
  children: number[];
}

/**
 * The JSON Patch (RFC 6902) that turns `before` into `after`. Appends to an array that existed
 * in `before` become `add …/-`, so appends of several children all survive, in child order.
 */
export function diffShared(before: JsonObject, after: JsonObject): Operation[] {
  const operations = jsonPatch.compare(before, after);
  return operations.map((operation) => {
    if (operation.op !== 'add') return operation;
    const slash = operation.path.lastIndexOf('/');
    const index = Number(operation.path.slice(slash + 1));
    const parentPath = operation.path.slice(0, slash);
    const parent = parentPath === '' ? before : jsonPatch.getValueByPointer(before, parentPath);
    if (Array.isArray(parent) && Number.isInteger(index) && index >= parent.length) {
      return { ...operation, path: `${parentPath}/-` };
    }
    return operation;
  });
}

/**
 * Applies children's patches to `shared` in parameter-set order and lists the paths that more
 * than one child wrote (a path conflicts with another when one is equal to or inside the other).
 * Appends (`…/-`) never conflict.
 *
 * @param patches - one patch per child, index = parameter-set index; `undefined` = no change.
 * @returns the merged object (a new object; `shared` is not modified) and the conflicts.
 */
export function mergePatches(
  shared: JsonObject,
  patches: ReadonlyArray<readonly Operation[] | undefined>,
): { shared: JsonObject; conflicts: MergeConflict[] } {
  const writers = new Map<string, number[]>();
  const conflicts = new Map<string, MergeConflict>();
  let document = jsonPatch.deepClone(shared) as JsonObject;
  patches.forEach((patch, child) => {
    if (!patch || patch.length === 0) return;
    for (const operation of patch) {
      if (operation.path.endsWith('/-')) continue;
      for (const [path, children] of writers) {
        const last = children[children.length - 1];
        if (last !== child && overlaps(path, operation.path)) {
          const key = path.length <= operation.path.length ? path : operation.path;
          const conflict = conflicts.get(key) ?? { path: key, children: [...children] };
          if (!conflict.children.includes(child)) conflict.children.push(child);
          conflicts.set(key, conflict);
        }
      }
      const list = writers.get(operation.path) ?? [];
      if (list[list.length - 1] !== child) list.push(child);
      writers.set(operation.path, list);
    }
    document = jsonPatch.applyPatch(document, patch as Operation[], false, true).newDocument as JsonObject;
  });
  return { shared: document, conflicts: [...conflicts.values()] };
}

function overlaps(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}
