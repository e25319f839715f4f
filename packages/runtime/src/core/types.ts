/** The string a node's `post` returns to pick a successor; `undefined` means `"default"`. */
export type Action = string;

/** A value or a Promise of it: every lifecycle method may return either (rule S12). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Params: a plain object of named values (the PocketFlow TypeScript port's type).
 * Arrays and other iterables are refused at compile time.
 */
export type NonIterableObject = Partial<Record<string, unknown>> & { [Symbol.iterator]?: never };

/** The default action name. */
export const DEFAULT_ACTION: Action = 'default';
