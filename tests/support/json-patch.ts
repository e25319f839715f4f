/**
 * A small RFC 6902 JSON Patch applier, written apart from the engine's (fast-json-patch), so that
 * the specs check step patches against the RFC and not against the library that made them.
 */

/** One RFC 6902 operation. */
export interface PatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

/** `document` with `patch` applied, operation by operation; `document` itself is left alone. */
export function applyPatch<T>(document: T, patch: readonly PatchOp[]): T {
  let doc = structuredClone(document) as unknown;
  for (const [i, operation] of patch.entries()) {
    try {
      doc = applyOne(doc, operation);
    } catch (error) {
      throw new Error(`operation ${i} ${JSON.stringify(operation)}: ${(error as Error).message}`, { cause: error });
    }
  }
  return doc as T;
}

function applyOne(doc: unknown, { op, path, value, from }: PatchOp): unknown {
  switch (op) {
    case 'add':
      return add(doc, path, structuredClone(value));
    case 'remove':
      return remove(doc, path).doc;
    case 'replace':
      return add(remove(doc, path).doc, path, structuredClone(value));
    case 'move': {
      const taken = remove(doc, from!);
      return add(taken.doc, path, taken.value);
    }
    case 'copy':
      return add(doc, path, structuredClone(get(doc, from!)));
    case 'test':
      if (JSON.stringify(get(doc, path)) !== JSON.stringify(value)) throw new Error(`test failed at ${path}`);
      return doc;
    default:
      throw new Error(`unknown op '${op}'`);
  }
}

/** RFC 6901: `''` is the whole document, else `/`-separated tokens with `~1` and `~0` escapes. */
function tokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`bad pointer '${pointer}'`);
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function get(doc: unknown, pointer: string): unknown {
  let at = doc;
  for (const token of tokens(pointer)) {
    if (at === null || typeof at !== 'object' || !(token in at)) throw new Error(`no value at ${pointer}`);
    at = (at as Record<string, unknown>)[token];
  }
  return at;
}

function parentOf(doc: unknown, pointer: string): { parent: Record<string, unknown> | unknown[]; key: string } {
  const path = tokens(pointer);
  const key = path.pop()!;
  const parent = get(doc, path.length === 0 ? '' : `/${path.join('/')}`);
  if (parent === null || typeof parent !== 'object') throw new Error(`no container for ${pointer}`);
  return { parent: parent as Record<string, unknown> | unknown[], key };
}

function add(doc: unknown, pointer: string, value: unknown): unknown {
  if (pointer === '') return value;
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) {
    const index = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(index) || index < 0 || index > parent.length) throw new Error(`bad index at ${pointer}`);
    parent.splice(index, 0, value);
  } else {
    parent[key] = value;
  }
  return doc;
}

function remove(doc: unknown, pointer: string): { doc: unknown; value: unknown } {
  if (pointer === '') return { doc: undefined, value: doc };
  const { parent, key } = parentOf(doc, pointer);
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length) throw new Error(`bad index at ${pointer}`);
    return { doc, value: parent.splice(index, 1)[0] };
  }
  if (!(key in parent)) throw new Error(`no value at ${pointer}`);
  const value = parent[key];
  delete parent[key];
  return { doc, value };
}
