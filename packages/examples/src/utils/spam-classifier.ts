import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import naiveBayesTextClassifier from 'wink-naive-bayes-text-classifier';
import type { DocumentRef, SpamLabel } from '../documents/types.js';
import { DEFAULT_PIPELINE_PARAMS } from '../documents/types.js';
import {
  classifierCacheFile,
  defaultClassifierCacheDir,
  readCachedClassifier,
  writeCachedClassifier,
} from './classifier-cache.js';
import { readDocumentBytesSync } from './document-reader.js';
import { parseEmail } from './email-parser.js';
import { getTokenizer } from './nlp.js';
import { checkNotBinary, checkNotEmpty } from './raw-content-checks.js';
import { listCorpus } from './spam-assassin-corpus.js';
import { FEATURE_CHARS, NB_CONFIG, spamClassifierCacheKey } from './spam-classifier-settings.js';
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

/** What a classifier was trained on: documents per label, documents skipped, words, training time (ms). */
export interface TrainingFigures {
  spam: number;
  ham: number;
  skipped: number;
  vocabulary: number;
  /** How long the training took where it ran, in milliseconds (in another process for a cached model). */
  ms: number;
}

/** A trained classifier, what it was trained on, and how this process got it. */
export interface SpamClassifier {
  classify(input: ClassifierInput): SpamPrediction;
  readonly trainedOn: TrainingFigures;
  /**
   * `training`: this process trained it (and cached it in `cacheFile` when the cache folder was
   * writable); `cache`: it read the model from `cacheFile`. `ms`: how long that took here.
   */
  readonly origin: { from: 'training' | 'cache'; cacheFile: string | undefined; ms: number };
}

/** Where and whether {@link loadSpamClassifier} keeps trained models. */
export interface SpamClassifierOptions {
  /**
   * The cache folder, or `false` to train without reading or writing any cache.
   * @defaultValue `node_modules/.cache/queueflow-examples` of this package (see `defaultClassifierCacheDir`)
   */
  cacheDir?: string | false;
}

type NaiveBayesTextClassifier = ReturnType<typeof naiveBayesTextClassifier>;

/** What a cache file holds besides the key: the model (wink's `exportJSON`) and its figures. */
interface CachedModel {
  model: string;
  trainedOn: TrainingFigures;
}

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
 * The process-wide spam classifier (wink-naive-bayes-text-classifier), made on first use by
 * {@link loadSpamClassifier} with the default cache: read from the cache file when an earlier
 * process trained the same model (a fraction of a second), else trained here (seconds of CPU,
 * yielding to the event loop every {@link TRAIN_DOCS_PER_YIELD} documents) and cached. Nothing
 * happens at import: a process that only builds the graph (`queueflow graph`, a worker
 * starting) never pays for it. Concurrent callers share one load; a failed load is tried again
 * by the next call.
 */
export function getSpamClassifier(): Promise<SpamClassifier> {
  training ??= loadSpamClassifier().catch((error: unknown) => {
    training = undefined; // let a later call try again
    throw error;
  });
  return training;
}

/**
 * A spam classifier trained on the corpus's fixed train split (see `splitOf`): documents read in
 * corpus order through the same parse and clean steps as the pipeline. The same code and corpus
 * give the same model in every process, so a worker classifies exactly like the CLI.
 *
 * The trained model is kept in a JSON file of the cache folder, named by a key made of the
 * corpus version and a hash of everything else that decides the model (the feature code, the
 * versions of the parsing and NLP packages, the settings): a later process with the same key
 * reads it instead of training; any change gives another key, so a stale model is never used.
 * An unreadable file is trained over.
 */
export async function loadSpamClassifier(options: SpamClassifierOptions = {}): Promise<SpamClassifier> {
  const started = performance.now();
  const cacheDir = options.cacheDir === undefined ? defaultClassifierCacheDir() : options.cacheDir;
  const key = cacheDir === false ? undefined : spamClassifierCacheKey();
  if (cacheDir !== false && key !== undefined) {
    const cached = readCachedClassifier<CachedModel>(cacheDir, key);
    const nb = cached && importModel(cached.model);
    if (cached && nb) {
      const origin = { from: 'cache' as const, cacheFile: classifierCacheFile(cacheDir, key), ms: elapsed(started) };
      return classifierOf(nb, cached.trainedOn, origin);
    }
  }
  const { nb, trainedOn } = await trainSpamClassifier();
  const cacheFile =
    cacheDir === false || key === undefined
      ? undefined
      : writeCachedClassifier(cacheDir, key, { model: nb.exportJSON(), trainedOn } satisfies CachedModel);
  return classifierOf(nb, trainedOn, { from: 'training', cacheFile, ms: elapsed(started) });
}

async function trainSpamClassifier(): Promise<{ nb: NaiveBayesTextClassifier; trainedOn: TrainingFigures }> {
  const started = performance.now();
  const nb = naiveBayesTextClassifier();
  nb.defineConfig(NB_CONFIG);
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
  return { nb, trainedOn: { ...counts, vocabulary: nb.stats().vocabulary, ms: elapsed(started) } };
}

/** A consolidated classifier from wink's `exportJSON`, or `undefined` when `model` is not one. */
function importModel(model: string): NaiveBayesTextClassifier | undefined {
  try {
    const nb = naiveBayesTextClassifier();
    nb.importJSON(model);
    nb.consolidate();
    return nb;
  } catch {
    return undefined;
  }
}

function classifierOf(
  nb: NaiveBayesTextClassifier,
  trainedOn: TrainingFigures,
  origin: SpamClassifier['origin'],
): SpamClassifier {
  return {
    trainedOn,
    origin,
    classify(input) {
      const odds = nb.computeOdds(classifierFeatures(input));
      const spam = odds.find(([label]) => label === 'spam');
      if (!spam) return { label: trainedOn.spam > trainedOn.ham ? 'spam' : 'ham', score: 0, known: false };
      return { label: spam[1] > 0 ? 'spam' : 'ham', score: Math.round(spam[1] * 1000) / 1000, known: true };
    },
  };
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
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
