/**
 * An in-memory engine with the methods the studio calls, for the studio's unit tests and for
 * working on the page (test/studio/serve-fake-studio.ts). Runs are plain records set up by the
 * test; actions change them and announce the change to `watch` listeners as an engine would.
 */
import jsonPatch from 'fast-json-patch';
import type {
  ChildSummary,
  FlowGraph,
  ForkOptions,
  Json,
  JsonObject,
  ListRunsOptions,
  MailboxInfo,
  MailboxesOptions,
  RunChange,
  WatchOptions,
  RunHandle,
  RunInfo,
  RunSummary,
  StepRecord,
  WorkerInfo,
} from '@queueflow/runtime';
import type { StudioEngine } from '../../src/studio/studio-engine.js';

export interface FakeRun {
  info: RunInfo;
  /** `shared` before the first step. */
  initial: JsonObject;
  history: StepRecord[];
  children: ChildSummary[];
}

function engineError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

export class FakeStudioEngine implements StudioEngine {
  readonly runs = new Map<string, FakeRun>();
  readonly graphs = new Map<string, FlowGraph>();
  workerList: WorkerInfo[] = [];
  mailboxList: MailboxInfo[] = [];
  readonly listeners = new Set<(event: RunChange) => void>();
  private readonly resyncs = new Set<() => void>();
  /** Every call, in order: `[method, ...args]`. */
  readonly calls: unknown[][] = [];
  /** Subscriptions made so far (the studio should make one however many pages are open). */
  watchCount = 0;
  private forks = 0;

  /** Adds a run: `shared` is the initial one, `history` patches it step by step. */
  add(run: Partial<RunInfo> & { id: string; flow: string }, history: StepRecord[] = [], initial: JsonObject = {}) {
    const now = Date.now();
    let shared = structuredClone(initial);
    for (const record of history)
      shared = jsonPatch.applyPatch(shared, structuredClone(record.patch), false, false).newDocument;
    const info: RunInfo = {
      status: 'completed',
      steps: history.length,
      attempts: 0,
      createdAt: now,
      updatedAt: now,
      errors: [],
      conflicts: [],
      shared,
      ...run,
    };
    this.runs.set(run.id, { info, initial, history, children: [] });
    return info;
  }

  /** Tells the watchers that run `id` changed. */
  emit(id: string): void {
    const info = this.runs.get(id)!.info;
    for (const listener of this.listeners) listener({ runId: id, status: info.status, steps: info.steps });
  }

  async get(runId: string): Promise<RunInfo | undefined> {
    this.calls.push(['get', runId]);
    const run = this.runs.get(runId);
    return run ? structuredClone(run.info) : undefined;
  }

  async list(options: ListRunsOptions = {}): Promise<RunSummary[]> {
    this.calls.push(['list', options]);
    const { offset = 0, limit = 100 } = options;
    return [...this.runs.values()]
      .map((run) => run.info)
      .filter((info) => !info.parentId)
      .filter(
        (info) => (!options.status || info.status === options.status) && (!options.flow || info.flow === options.flow),
      )
      .sort((a, b) => b.createdAt - a.createdAt)
      .slice(offset, offset + limit)
      .map(({ errors: _e, conflicts: _c, children: _ch, shared: _s, ...summary }) => summary);
  }

  async cancel(runId: string): Promise<void> {
    this.calls.push(['cancel', runId]);
    const run = this.must(runId);
    if (['completed', 'failed', 'cancelled'].includes(run.info.status)) return;
    run.info.status = 'cancelled';
    run.info.finishedAt = Date.now();
    this.emit(runId);
  }

  async history(runId: string): Promise<StepRecord[]> {
    this.calls.push(['history', runId]);
    return structuredClone(this.must(runId).history);
  }

  async retry(runId: string): Promise<RunHandle> {
    this.calls.push(['retry', runId]);
    const run = this.must(runId);
    if (run.info.status !== 'failed' && run.info.status !== 'cancelled')
      throw engineError(
        'RUN_NOT_RETRYABLE',
        `run '${runId}' is ${run.info.status}: only a failed or cancelled run goes on`,
      );
    run.info.status = 'running';
    run.info.retries = (run.info.retries ?? 0) + 1;
    delete run.info.finishedAt;
    delete run.info.error;
    this.emit(runId);
    return this.handle(runId);
  }

  async fork(runId: string, options: ForkOptions): Promise<RunHandle> {
    this.calls.push(['fork', runId, options]);
    const source = this.must(runId);
    let shared = await this.sharedAt(runId, options.step);
    if (options.patch) {
      try {
        shared = jsonPatch.applyPatch(shared, structuredClone(options.patch), true, false).newDocument;
      } catch (error) {
        throw engineError('INVALID_OPTION', `fork: the patch does not apply: ${(error as Error).message}`);
      }
    }
    const id = `${runId.slice(0, 12)}F${++this.forks}`;
    this.add(
      {
        id,
        flow: source.info.flow,
        status: 'queued',
        forkedFrom: { runId, step: options.step },
        createdAt: Date.now(),
      },
      [],
      shared,
    );
    this.emit(id);
    return this.handle(id);
  }

  async workers(): Promise<WorkerInfo[]> {
    this.calls.push(['workers']);
    return structuredClone(this.workerList);
  }

  async mailboxes(options: MailboxesOptions = {}): Promise<MailboxInfo[]> {
    this.calls.push(['mailboxes', options]);
    const most = options.messages ?? 20;
    return this.mailboxList.map((box) => ({ ...structuredClone(box), messages: box.messages.slice(0, most) }));
  }

  async answer(address: string, messageId: string, body: Json): Promise<void> {
    this.calls.push(['answer', address, messageId, body]);
    const box = this.mailboxList.find((candidate) => candidate.address === address);
    const index = box?.messages.findIndex((message) => message.id === messageId) ?? -1;
    if (!box || index < 0) throw engineError('MESSAGE_NOT_FOUND', `no message '${messageId}' waits at '${address}'`);
    const [question] = box.messages.splice(index, 1);
    box.size -= 1;
    if (!question!.replyTo) throw engineError('INVALID_OPTION', `message '${messageId}' has no replyTo`);
    const asker = this.mailboxList.find((candidate) => candidate.address === question!.replyTo);
    for (const parked of asker?.parked.splice(0) ?? []) {
      const run = this.runs.get(parked.runId);
      if (!run) continue;
      run.info.status = 'completed';
      run.info.finishedAt = Date.now();
      run.info.shared = { ...run.info.shared, answer: body };
      this.emit(parked.runId);
    }
  }

  async watch(listener: (event: RunChange) => void, options: WatchOptions = {}): Promise<() => void> {
    this.watchCount += 1;
    this.listeners.add(listener);
    if (options.resync) this.resyncs.add(options.resync);
    return () => {
      this.listeners.delete(listener);
      if (options.resync) this.resyncs.delete(options.resync);
    };
  }

  /** Tells the watchers their subscription was made again (changes may have been missed). */
  resync(): void {
    for (const resync of this.resyncs) resync();
  }

  async sharedAt(runId: string, step: number): Promise<JsonObject> {
    this.calls.push(['sharedAt', runId, step]);
    const run = this.must(runId);
    if (step > run.history.length) throw engineError('INVALID_OPTION', `run '${runId}' has no step ${step}`);
    let shared = structuredClone(run.initial);
    for (const record of run.history.slice(0, step))
      shared = jsonPatch.applyPatch(shared, structuredClone(record.patch), false, false).newDocument;
    return shared;
  }

  async children(runId: string, options: { offset?: number; limit?: number } = {}): Promise<ChildSummary[]> {
    this.calls.push(['children', runId, options]);
    const { offset = 0, limit = 100 } = options;
    return structuredClone(this.must(runId).children.slice(offset, offset + limit));
  }

  async graph(flow: string): Promise<FlowGraph | undefined> {
    return this.graphs.get(flow);
  }

  private handle(id: string): RunHandle {
    return {
      id,
      result: () => Promise.reject(engineError('INTERNAL', 'the fake engine runs nothing: no results')),
    };
  }

  private must(runId: string): FakeRun {
    const run = this.runs.get(runId);
    if (!run) throw engineError('RUN_NOT_FOUND', `no run '${runId}'`);
    return run;
  }
}
