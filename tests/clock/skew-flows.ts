import { defineFlow, Flow, Node } from '@queueflow/runtime';

/** Fails its first try; the second, 2 s later (`waitMs`), succeeds. */
class FailsOnce extends Node {
  override exec(): string {
    if ((this.runContext?.attempt ?? 0) === 0) throw new Error('the first try fails');
    return 'ok';
  }
}

export const failsOnce = defineFlow(
  'fails-once-then-waits',
  () => new Flow(new FailsOnce({ name: 'fails-once', maxRetries: 2, waitMs: 2000 })),
);
