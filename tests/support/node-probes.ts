/**
 * How tests observe and steer node code that runs in the test's own process (LocalEngine, and
 * RedisEngine with in-process workers): plain module-level state the nodes write to and wait on.
 * Key each entry by a token the test puts in `shared` or params, one per test (and per engine).
 */

/** A promise the test opens when it wants node code to go on. */
export interface Gate {
  promise: Promise<void>;
  open(): void;
}

export function gate(): Gate {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Counts and records what node code did, by key (a token in `shared` or params). */
export class Tally<T = unknown> {
  private readonly entries = new Map<string, T[]>();

  add(key: string, value: T): void {
    const list = this.entries.get(key) ?? [];
    list.push(value);
    this.entries.set(key, list);
  }

  of(key: string): T[] {
    return this.entries.get(key) ?? [];
  }

  count(key: string): number {
    return this.of(key).length;
  }
}

/** Resolves when `signal` aborts, with its reason. */
export function aborted(signal: AbortSignal | undefined): Promise<unknown> {
  if (!signal) return new Promise(() => {});
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}
