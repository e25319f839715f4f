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

function findNonJson(value: unknown, path: string, ancestors: Set<object>): string | undefined {
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
  for (const key of Object.keys(object)) {
    const item = (object as Record<string, unknown>)[key];
    if (item === undefined) continue;
    const problem = findNonJson(item, `${path}${propertyPath(key)}`, ancestors);
    if (problem) return problem;
  }
  ancestors.delete(object);
  return undefined;
}

function propertyPath(key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** A deep copy through JSON: what a value looks like after crossing the engine. */
export function jsonCopy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}
