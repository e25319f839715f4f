import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import naiveBayesTextClassifier from 'wink-naive-bayes-text-classifier';
import type { DocumentRef, SpamLabel } from '../documents/types.js';
import { DEFAULT_PIPELINE_PARAMS } from '../documents/types.js';
import { readDocumentBytesSync } from './document-reader.js';
import { parseEmail } from './email-parser.js';
import { getTokenizer } from './nlp.js';
import { checkNotBinary, checkNotEmpty } from './raw-content-checks.js';
import { listCorpus } from './spam-assassin-corpus.js';
import { cleanText } from './text-cleaner.js';

/** What the classifier reads of a document. */
export interface ClassifierInput {
  subject: string | null;
  text: string | null;
  senderDomain: string | null;
}

/** A prediction: the label and its log2 odds of spam over ham (positive: spam). */
export interface SpamPrediction {
  label: SpamLabel;
  score: number;
  /** `false` when no word of the document was seen in training: the label is the majority class. */
  known: boolean;
}

/** A trained classifier and what it was trained on. */
export interface SpamClassifier {
  classify(input: ClassifierInput): SpamPrediction;
  readonly trainedOn: { spam: number; ham: number; skipped: number; vocabulary: number; ms: number };
}

/** Characters of text the classifier reads per document. */
const FEATURE_CHARS = 20_000;

/**
 * Training documents between two yields to the event loop. Training is seconds of CPU work whose
 * only awaits are on promises that settle at once, so without yields no timer or socket callback
 * would run until it ends: a queueflow worker training inside a step would miss its BullMQ lock
 * renewals. 50 documents take about a tenth of a second.
 */
const TRAIN_DOCS_PER_YIELD = 50;

/**
 * The features of a document: the lower-cased words of its subject and text that are not stop
 * words (wink-nlp tokens), one `t:<type>` token per URL, email address, number, currency or
 * emoji, and the sender's top-level domain.
 */
export function classifierFeatures(input: ClassifierInput): string[] {
  const nlp = getTokenizer();
  const { its } = nlp;
  const doc = nlp.readDoc(`${input.subject ?? ''}\n${(input.text ?? '').slice(0, FEATURE_CHARS)}`);
  const tokens = doc.tokens();
  const types = tokens.out(its.type) as string[];
  const normals = tokens.out(its.normal) as string[];
  const stopWords = tokens.out(its.stopWordFlag) as unknown as boolean[];
  const features: string[] = [];
  types.forEach((type, i) => {
    if (type === 'word') {
      if (!stopWords[i]) features.push(normals[i] ?? '');
    } else if (type !== 'punctuation' && type !== 'tabCRLF' && type !== 'symbol') {
      features.push(`t:${type}`);
    }
  });
  const tld = input.senderDomain?.split('.').pop();
  if (tld) features.push(`tld:${tld}`);
  return features;
}

let training: Promise<SpamClassifier> | undefined;

/**
 * The process-wide spam classifier (wink-naive-bayes-text-classifier), trained on first use on
 * the corpus's fixed train split (see `splitOf`): documents read in corpus order through the same
 * parse and clean steps as the pipeline. The same code and corpus give the same model in every
 * process, so a worker that trains its own classifies exactly like the CLI. Training takes a few
 * seconds, yielding to the event loop every {@link TRAIN_DOCS_PER_YIELD} documents; concurrent
 * callers share one training.
 */
export function getSpamClassifier(): Promise<SpamClassifier> {
  training ??= trainSpamClassifier().catch((error: unknown) => {
    training = undefined; // let a later call try again
    throw error;
  });
  return training;
}

async function trainSpamClassifier(): Promise<SpamClassifier> {
  const started = performance.now();
  const nb = naiveBayesTextClassifier();
  nb.defineConfig({ considerOnlyPresence: false, smoothingFactor: 0.5 });
  const counts = { spam: 0, ham: 0, skipped: 0 };
  let read = 0;
  for (const ref of listCorpus()) {
    if (ref.split !== 'train' || ref.trueLabel === null) continue;
    if (++read % TRAIN_DOCS_PER_YIELD === 0) await yieldToEventLoop();
    const input = await readForTraining(ref);
    if (input === null) {
      counts.skipped++;
      continue;
    }
    nb.learn(classifierFeatures(input), ref.trueLabel);
    counts[ref.trueLabel]++;
  }
  nb.consolidate();
  const trainedOn = {
    ...counts,
    vocabulary: nb.stats().vocabulary,
    ms: Math.round(performance.now() - started),
  };
  return {
    trainedOn,
    classify(input) {
      const odds = nb.computeOdds(classifierFeatures(input));
      const spam = odds.find(([label]) => label === 'spam');
      if (!spam) return { label: trainedOn.spam > trainedOn.ham ? 'spam' : 'ham', score: 0, known: false };
      return { label: spam[1] > 0 ? 'spam' : 'ham', score: Math.round(spam[1] * 1000) / 1000, known: true };
    },
  };
}

async function readForTraining(ref: DocumentRef): Promise<ClassifierInput | null> {
  try {
    // Synchronous reads: training is one-off CPU work, and they cost a fraction of async ones.
    const bytes = readDocumentBytesSync(ref, DEFAULT_PIPELINE_PARAMS.maxBytes);
    checkNotEmpty(bytes);
    checkNotBinary(bytes);
    const email = await parseEmail(bytes);
    const text = cleanText({ kind: 'email', plainText: email.plainText, html: email.html });
    if (text === '' && email.subject === null) return null;
    return { subject: email.subject, text, senderDomain: email.senderDomain };
  } catch {
    return null; // a document the pipeline would reject is not trained on either
  }
}
