import { QueueflowError } from '../errors/queueflow-error.js';

/** A value that survives `JSON.stringify` → `JSON.parse` unchanged. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** A JSON object: the shape of `shared` and params on the engines. */
export type JsonObject = { [key: string]: Json };

/**
 * Checks that `value` survives JSON unchanged and throws a `NOT_JSON` {@link QueueflowError}
 * naming the first offending path otherwise, e.g. `shared.docs[3].open is a function`.
 * Object properties that are `undefined` are allowed (JSON drops them, as it would anyway).
 *
 * Keys that JSON Patch refuses to write (fast-json-patch bans them against prototype pollution)
 * are refused too, because the engines keep `shared` as JSON Patches (step history, fan-out
 * merges): an own key `__proto__` anywhere (`JSON.parse` makes one), and a key `prototype` in an
 * object under a key `constructor`. The message names the path, e.g.
 * `shared.a["__proto__"] is a key that JSON Patch refuses`.
 *
 * @param path - how the value is named in the message, e.g. `shared` or `prepRes of 'parse'`.
 * @throws QueueflowError with code `NOT_JSON`.
 */
export function assertJson(value: unknown, path: string): void {
  const problem = findNonJson(value, path, new Set());
  if (problem) {
    throw new QueueflowError('NOT_JSON', `${problem}; values that cross the engine must survive JSON`, {
      retryable: false,
    });
  }
}

/**
 * @param key - the key under which `value` sits in its parent object, if it does (a key
 *   `prototype` is refused only under a key `constructor`, as JSON Patch does).
 */
function findNonJson(value: unknown, path: string, ancestors: Set<object>, key?: string): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path} is ${value} (JSON turns it into null)`;
    case 'undefined':
      return `${path} is undefined`;
    case 'function':
      return `${path} is a function`;
    case 'symbol':
      return `${path} is a symbol`;
    case 'bigint':
      return `${path} is a bigint`;
  }
  if (value === null) return undefined;
  const object = value as object;
  if (ancestors.has(object)) return `${path} is a circular reference`;
  if (Array.isArray(object)) {
    ancestors.add(object);
    for (let i = 0; i < object.length; i++) {
      const item: unknown = object[i];
      const problem =
        item === undefined
          ? `${path}[${i}] is undefined (JSON turns it into null)`
          : findNonJson(item, `${path}[${i}]`, ancestors);
      if (problem) return problem;
    }
    ancestors.delete(object);
    return undefined;
  }
  const proto: unknown = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) {
    const name = (object as { constructor?: { name?: string } }).constructor?.name ?? 'an object with a prototype';
    return `${path} is a ${name}, not a plain object`;
  }
  ancestors.add(object);
  for (const member of Object.keys(object)) {
    const item = (object as Record<string, unknown>)[member];
    if (item === undefined) continue;
    if (member === '__proto__' || (member === 'prototype' && key === 'constructor')) {
      return `${path}${propertyPath(member)} is a key that JSON Patch refuses`;
    }
    const problem = findNonJson(item, `${path}${propertyPath(member)}`, ancestors, member);
    if (problem) return problem;
  }
  ancestors.delete(object);
  return undefined;
}

function propertyPath(key: string): string {
  // `x.__proto__` would read as the prototype, not the key: brackets for it.
  return /^[A-Za-z_$][\w$]*$/.test(key) && key !== '__proto__' ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** A deep copy through JSON: what a value looks like after crossing the engine. */
export function jsonCopy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
