/**
 * Maps `items` through `fn` with at most `limit` calls in flight (all at once when `limit` is
 * undefined), keeping results in item order. The first rejection aborts `controller`, so that
 * siblings stop at their next step boundary, and rejects the returned Promise at once (like
 * `Promise.all`); no further item starts.
 */
export function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number | undefined,
  controller: AbortController,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  return new Promise((resolve, reject) => {
    const results = new Array<R>(items.length);
    let next = 0;
    let settled = 0;
    if (items.length === 0) return resolve(results);
    const startNext = (): void => {
      if (controller.signal.aborted || next >= items.length) return;
      const index = next++;
      fn(items[index] as T, index).then(
        (value) => {
          results[index] = value;
          if (++settled === items.length) resolve(results);
          else startNext();
        },
        (error: unknown) => {
          if (!controller.signal.aborted) controller.abort(error);
          reject(error);
        },
      );
    };
    const lanes = Math.min(limit ?? items.length, items.length);
    for (let i = 0; i < lanes; i++) startNext();
  });
}

/** A controller that also aborts when `parent` does. */
export function linkedController(parent: AbortSignal | undefined): AbortController {
  const controller = new AbortController();
  if (parent) {
    if (parent.aborted) controller.abort(parent.reason);
    else parent.addEventListener('abort', () => controller.abort(parent.reason), { once: true });
  }
  return controller;
}
