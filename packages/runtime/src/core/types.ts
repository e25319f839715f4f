/** The string a node's `post` returns to pick a successor; `undefined` means `"default"`. */
export type Action = string;

/** A value or a Promise of it: every lifecycle method may return either (rule S12). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Whether `value` is a Promise or another thenable, which `await` would wait for; the hot paths
 * await only those (an `await` of a plain value still costs a microtask turn).
 */
export function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    value instanceof Promise ||
    (value !== null &&
      (typeof value === 'object' || typeof value === 'function') &&
      typeof (value as { then?: unknown }).then === 'function')
  );
}

/**
 * Params: a plain object of named values (the PocketFlow TypeScript port's type), and the
 * default params type of every node and flow (any key reads as `unknown`).
 * Arrays and other iterables are refused at compile time.
 */
export type NonIterableObject = Partial<Record<string, unknown>> & { [Symbol.iterator]?: never };

/**
 * What a node's or flow's params type `P` may be: any object type that is not an array or other
 * iterable. An `interface` works as it is (it needs no index signature); so does a type literal.
 *
 * @example
 * ```ts
 * interface Lang { lang: string }
 * class Translate extends Node<Shared, Lang> {
 *   override exec() { return this.params.lang; }   // string
 * }
 * ```
 */
export type ParamsObject = object & { [Symbol.iterator]?: never };

/** The default action name. */
export const DEFAULT_ACTION: Action = 'default';
