import { analyseText, type TextAnalysis } from '../utils/text-analysis.js';
import { DocumentStage, type ResolvedParams } from './document-stage.js';
import type { WorkItem } from './types.js';

export interface AnalyseInput {
  subject: string | null;
  text: string | null;
  maxAnalyseChars: number;
  keywordCount: number;
  summarySentences: number;
}

/**
 * Language statistics, keywords and an extractive summary of the clean text (the subject when
 * the body is empty), with wink-nlp and its English lite model.
 */
export class AnalyseDocument extends DocumentStage<AnalyseInput, TextAnalysis> {
  readonly stage = 'analyse' as const;

  protected input(work: WorkItem | undefined, params: ResolvedParams): AnalyseInput {
    return {
      subject: work?.subject ?? null,
      text: work?.text ?? null,
      maxAnalyseChars: params.maxAnalyseChars,
      keywordCount: params.keywordCount,
      summarySentences: params.summarySentences,
    };
  }

  protected transform(input: AnalyseInput): TextAnalysis {
    if (input.text === null) throw new Error('analyse stage reached before the text was cleaned');
    return analyseText(input.text === '' ? (input.subject ?? '') : input.text, {
      maxChars: input.maxAnalyseChars,
      keywordCount: input.keywordCount,
      summarySentences: input.summarySentences,
    });
  }

  protected apply(work: WorkItem, output: TextAnalysis): void {
    work.language = output.language;
    work.keywords = output.keywords;
    work.summary = output.summary;
    work.summarySource = output.summary === null ? null : 'extractive';
  }
}
