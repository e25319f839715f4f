import { nanoid } from 'nanoid';
import type { StepEmitterPort } from '../interpreter/step-types.js';
import type { RunStore, StreamWrite } from './run-store.js';

/**
 * The stream of one try of a step on an engine: what node code's `this.emit` writes to. `emit`
 * returns at once; the entries are appended in the background, in emit order, a batch per store
 * call (those emitted while the previous call was out go together). The step driver calls
 * {@link StepStream.flush} before it commits the step, so every entry of a step is stored before
 * the step's outcome, and the end marker a run's end appends comes after all of them.
 */
export class StepStream implements StepEmitterPort {
  private pending: StreamWrite['entries'] = [];
  private writing: Promise<void> = Promise.resolve();
  private failure: Error | undefined;
  private closed = false;
  /**
   * Names this try, so that a try after one cut short gets an attempt of its own; made at the
   * first write (most steps emit nothing). A fan-out item has none.
   */
  private token: string | undefined;

  constructor(
    private readonly store: RunStore,
    private readonly runId: string,
    private readonly at: { step: number; attempt: number; item?: number },
    private readonly now: () => number,
  ) {}

  emit(node: string, data: string): void {
    if (this.closed) return; // the step has ended: a late emit (a stray timer) has no place
    this.pending.push({ node, at: this.now(), data });
    if (this.pending.length === 1) this.writing = this.writing.then(() => this.write());
  }

  /**
   * Waits until every entry emitted so far is stored; later emits are dropped.
   * @throws the store's error when an append failed (the step is not committed then).
   */
  async flush(): Promise<void> {
    this.closed = true;
    await this.writing;
    if (this.failure !== undefined) throw this.failure;
  }

  private async write(): Promise<void> {
    const entries = this.pending;
    this.pending = [];
    if (entries.length === 0 || this.failure !== undefined) return;
    if (this.at.item === undefined) this.token ??= nanoid(10);
    try {
      await this.store.appendStream(this.runId, {
        step: this.at.step,
        attempt: this.at.attempt,
        ...(this.token === undefined ? {} : { token: this.token }),
        ...(this.at.item === undefined ? {} : { item: this.at.item }),
        entries,
      });
    } catch (error) {
      this.failure = error instanceof Error ? error : new Error(String(error));
    }
  }
}
