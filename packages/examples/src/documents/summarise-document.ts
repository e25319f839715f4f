import { llmConfigFromEnv } from '../utils/llm-client.js';
import { modelCallError } from '../llm/retry-after.js';
import { llmSummary } from '../utils/llm-summary.js';
import { DocumentStage, type ResolvedParams, type StageResult } from './document-stage.js';
import type { WorkItem } from './types.js';

export interface SummariseInput {
  enabled: boolean;
  subject: string | null;
  text: string | null;
}

export interface SummariseOutput {
  summary: string | null;
  warning: string | null;
}

/**
 * Whether a try of the summarise node on `input` calls the model: the run asked for a summary
 * (`--llm`), the document has text, and this process has the model's `OPENAI_*` settings. Its
 * `limits` apply only then (their `when`), so a run without `--llm` never waits for the `llm`
 * budget.
 */
export function summaryCallsModel(input: SummariseInput): boolean {
  return input.enabled && !!input.text && llmConfigFromEnv() !== null;
}

/**
 * The optional LLM summary: when the run asks for it (`llmSummary: true`) and the process that
 * runs this node has `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL` set, replaces the
 * extractive summary with one from the model. Otherwise it does nothing, so the graph has the
 * same shape either way. Its failures never fail the document: after the node's tries, the
 * fallback keeps the extractive summary and records a warning. A 429 from the model becomes a
 * `RateLimitedError`: the visit waits the provider's `Retry-After` without using a try.
 */
export class SummariseDocument extends DocumentStage<SummariseInput, SummariseOutput> {
  readonly stage = 'summarise' as const;

  protected input(work: WorkItem | undefined, params: ResolvedParams): SummariseInput {
    return { enabled: params.llmSummary === true, subject: work?.subject ?? null, text: work?.text ?? null };
  }

  protected async transform(input: SummariseInput): Promise<SummariseOutput> {
    if (!input.enabled || !input.text) return { summary: null, warning: null };
    const config = llmConfigFromEnv();
    if (config === null) {
      return {
        summary: null,
        warning: 'LLM summary asked for, but OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL are not all set',
      };
    }
    try {
      return {
        // The model's answer streams to whoever follows the run (engine.stream, queueflow tail).
        summary: await llmSummary(config, { subject: input.subject, text: input.text }, this.signal, (token) =>
          this.emit({ summary: token }),
        ),
        warning: null,
      };
    } catch (error) {
      // A 429: wait as the provider says, using no try, and hold the budget back for everyone.
      throw modelCallError(error);
    }
  }

  override execFallback(_input: SummariseInput, error: Error): StageResult<SummariseOutput> {
    const warning = `LLM summary failed after ${this.maxRetries} tries (${error.message}): kept the extractive summary`;
    return { ok: true, output: { summary: null, warning }, ms: 0 };
  }

  protected apply(work: WorkItem, output: SummariseOutput): void {
    if (output.summary !== null) {
      work.summary = output.summary;
      work.summarySource = 'llm';
    }
    if (output.warning !== null) work.warnings.push(output.warning);
  }
}
