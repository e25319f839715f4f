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

  /**
   * @param at - the try: its step and attempt, a fan-out item's index; for a step's try, the
   *   worker running it and the node it visits (named by a restart entry), and `restart`: the
   *   step's last try that wrote entries was cut short (StoredRun.streamWriter), so the restart
   *   entry is written at once, before this try emits anything (RunStore.appendStream).
   */
  constructor(
    private readonly store: RunStore,
    private readonly runId: string,
    private readonly at: {
      step: number;
      attempt: number;
      item?: number;
      worker?: string;
      node?: string;
      restart?: boolean;
    },
    private readonly now: () => number,
  ) {
    if (at.restart && at.item === undefined) this.writing = this.write(true);
  }

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

  /**
   * Drops the entries not yet stored and every later emit: the try was given up (its lock lost,
   * its worker fenced), so what it still says belongs to no try that commits.
   */
  drop(): void {
    this.closed = true;
    this.pending = [];
  }

  /** Appends the entries pending; `opening`: also when there are none (a restart, see the constructor). */
  private async write(opening = false): Promise<void> {
    const entries = this.pending;
    this.pending = [];
    if ((entries.length === 0 && !opening) || this.failure !== undefined) return;
    const { step, attempt, item, worker, node } = this.at;
    if (item === undefined) this.token ??= nanoid(10);
    try {
      await this.store.appendStream(this.runId, {
        step,
        attempt,
        ...(this.token === undefined ? {} : { token: this.token, worker: worker ?? '', at: this.now() }),
        ...(this.token === undefined || node === undefined ? {} : { node }),
        ...(item === undefined ? {} : { item }),
        entries,
      });
    } catch (error) {
      this.failure = error instanceof Error ? error : new Error(String(error));
    }
  }
}
