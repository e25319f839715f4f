import { Node, type Action } from '@queueflow/runtime';
import { toFailure } from './document-error.js';
import { emptyWorkItem } from './work-item.js';
import {
  DEFAULT_PIPELINE_PARAMS,
  type DocumentFailure,
  type DocumentParams,
  type DocumentRef,
  type PipelineParams,
  type PipelineShared,
  type StageName,
  type WorkItem,
} from './types.js';

/** What a stage's `exec` hands its `post`: plain JSON either way. */
export type StageResult<O> = { ok: true; output: O; ms: number } | { ok: false; failure: DocumentFailure };

/** The action a stage returns when its document failed: the flow jumps to the record stage. */
export const FAIL: Action = 'fail';

/** The params of a walk with the run's defaults filled in. */
export type ResolvedParams = Required<PipelineParams> & DocumentRef;

/**
 * One stage of the per-document flow, the shape every stage shares:
 *
 * - `prep` reads the stage's input from `shared.work[docId]` and the params (it never throws: a
 *   missing work item is for `transform` to reject);
 * - `exec` runs the stage and times it; errors go through the node's retry policy, and a
 *   {@link DocumentError} skips the remaining tries;
 * - `execFallback` turns the last error into a {@link DocumentFailure}, so a bad document never
 *   fails the batch;
 * - `post` writes the output into `shared.work[docId]` and returns `"default"`, or records the
 *   failure and returns {@link FAIL}.
 *
 * Every value crossing these methods is JSON, as the distributed engine requires.
 */
export abstract class DocumentStage<In, Out> extends Node<PipelineShared, DocumentParams> {
  abstract readonly stage: Exclude<StageName, 'record'>;

  /** The stage's input, from the document's work item (absent before the parse stage posts). */
  protected abstract input(work: WorkItem | undefined, params: ResolvedParams): In;
  /** The stage's work; throw a {@link DocumentError} to fail the document. */
  protected abstract transform(input: In): Promise<Out> | Out;
  /** Writes the stage's output into the document's work item. */
  protected abstract apply(work: WorkItem, output: Out): void;

  override prep(shared: PipelineShared): In {
    return this.input(shared.work?.[this.params.docId], resolveParams(this.params));
  }

  override async exec(input: In): Promise<StageResult<Out>> {
    this.untimedMs = 0;
    const started = performance.now();
    const output = await this.transform(input);
    const ms = performance.now() - started - this.untimedMs;
    return { ok: true, output, ms: Math.round(Math.max(0, ms) * 100) / 100 };
  }

  /** Time this visit spent in {@link untimed} waits; set per visit (each visit is a copy). */
  declare protected untimedMs: number;

  /**
   * Awaits `work` without counting the wait in the stage's time: for I/O, during which other
   * documents in flight run, so that stage times measure the document's own work.
   */
  protected async untimed<T>(work: Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work;
    } finally {
      this.untimedMs += performance.now() - started;
    }
  }

  override execFallback(_input: In, error: Error): StageResult<Out> {
    return { ok: false, failure: toFailure(this.stage, error) };
  }

  override post(shared: PipelineShared, _input: In, result: StageResult<Out>): Action | undefined {
    shared.work ??= {};
    const work = (shared.work[this.params.docId] ??= emptyWorkItem());
    if (!result.ok) {
      work.failure = result.failure;
      return FAIL;
    }
    work.timingMs[this.stage] = result.ms;
    this.apply(work, result.output);
    return undefined;
  }
}

/** The params with the pipeline's defaults for what the run did not set. */
function resolveParams(params: DocumentParams): ResolvedParams {
  const resolved = { ...DEFAULT_PIPELINE_PARAMS, ...params } as ResolvedParams;
  for (const key of Object.keys(DEFAULT_PIPELINE_PARAMS) as (keyof PipelineParams)[]) {
    if (params[key] === undefined || params[key] === null) {
      (resolved as Record<string, unknown>)[key] = DEFAULT_PIPELINE_PARAMS[key];
    }
  }
  return resolved;
}

/** Cuts `text` to `max` characters, noting it in `warnings`. */
export function capText(text: string | null, max: number, what: string, warnings: string[]): string | null {
  if (text === null || text.length <= max) return text;
  warnings.push(`${what} cut from ${text.length} to ${max} characters (maxTextChars)`);
  return text.slice(0, max);
}
