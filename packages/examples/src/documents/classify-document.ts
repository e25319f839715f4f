import { getSpamClassifier, type SpamPrediction } from '../utils/spam-classifier.js';
import { DocumentStage } from './document-stage.js';
import type { WorkItem } from './types.js';

export interface ClassifyInput {
  subject: string | null;
  text: string | null;
  senderDomain: string | null;
}

/**
 * Spam or ham, with the naive Bayes classifier trained on the corpus's fixed train split. The
 * first visit in a process trains it (a few seconds); later visits reuse it.
 */
export class ClassifyDocument extends DocumentStage<ClassifyInput, SpamPrediction> {
  readonly stage = 'classify' as const;

  protected input(work: WorkItem | undefined): ClassifyInput {
    return { subject: work?.subject ?? null, text: work?.text ?? null, senderDomain: work?.senderDomain ?? null };
  }

  protected async transform(input: ClassifyInput): Promise<SpamPrediction> {
    if (input.text === null) throw new Error('classify stage reached before the text was cleaned');
    const classifier = await getSpamClassifier();
    return classifier.classify(input);
  }

  protected apply(work: WorkItem, output: SpamPrediction): void {
    work.predictedLabel = output.label;
    work.spamScore = output.score;
    if (!output.known) work.warnings.push('no word known to the classifier: predicted the majority class');
  }
}
