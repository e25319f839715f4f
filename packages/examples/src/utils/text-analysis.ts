import type { LanguageStats } from '../documents/types.js';
import { getNlp } from './nlp.js';

/** What the analyse stage computes for one text. */
export interface TextAnalysis {
  language: LanguageStats;
  keywords: string[];
  summary: string | null;
}

export interface AnalyseOptions {
  /** Characters analysed; the rest is ignored. */
  maxChars: number;
  keywordCount: number;
  summarySentences: number;
}

/** A summary sentence has between these many words (shorter or longer ones are usually junk). */
const SUMMARY_MIN_WORDS = 4;
const SUMMARY_MAX_WORDS = 60;
const SUMMARY_MAX_CHARS = 400;
const KEYWORD = /^\p{L}[\p{L}'-]*\p{L}$/u;

/**
 * Language statistics, keywords and an extractive summary of `text`, with wink-nlp:
 *
 * - keywords: the most frequent words that are not stop words (3 letters or more), ties broken
 *   alphabetically so that the result is deterministic;
 * - summary: the `summarySentences` most important sentences by wink-nlp's
 *   `its.sentenceWiseImportance` (part-of-speech n-gram salience), in text order.
 */
export function analyseText(text: string, options: AnalyseOptions): TextAnalysis {
  const { its } = getNlp();
  const input = text.slice(0, options.maxChars);
  const doc = getNlp().readDoc(input);
  const tokens = doc.tokens();
  const types = tokens.out(its.type) as string[];
  const normals = tokens.out(its.normal) as string[];
  const stopWords = tokens.out(its.stopWordFlag) as unknown as boolean[];

  let words = 0;
  let urls = 0;
  let emails = 0;
  let numbers = 0;
  const distinct = new Set<string>();
  const frequency = new Map<string, number>();
  types.forEach((type, i) => {
    if (type === 'word') {
      words++;
      const word = normals[i] ?? '';
      distinct.add(word);
      if (!stopWords[i] && word.length >= 3 && KEYWORD.test(word)) frequency.set(word, (frequency.get(word) ?? 0) + 1);
    } else if (type === 'url') urls++;
    else if (type === 'email') emails++;
    else if (type === 'number') numbers++;
  });
  const sentences = doc.sentences().length();
  const readability = doc.out(its.readabilityStats) as unknown as { fres: number; readingTimeSecs: number };

  const keywords = [...frequency]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, options.keywordCount)
    .map(([word]) => word);

  return {
    language: {
      characters: input.length,
      tokens: types.length,
      words,
      sentences,
      lexicalDiversity: words === 0 ? 0 : round(distinct.size / words, 3),
      wordsPerSentence: sentences === 0 ? 0 : round(words / sentences, 1),
      urls,
      emails,
      numbers,
      readingEase: Number.isFinite(readability.fres) ? round(readability.fres, 1) : 0,
      // wink-nlp gives NaN for a text without words (a bare URL): not JSON, so 0.
      readingTimeSecs: Number.isFinite(readability.readingTimeSecs) ? readability.readingTimeSecs : 0,
    },
    keywords,
    summary: extractiveSummary(doc, options.summarySentences),
  };
}

type WinkDocument = ReturnType<ReturnType<typeof getNlp>['readDoc']>;

function extractiveSummary(doc: WinkDocument, count: number): string | null {
  const { its } = getNlp();
  const sentences = doc.sentences();
  if (sentences.length() === 0 || count <= 0) return null;
  const scored = (doc.out(its.sentenceWiseImportance) as unknown as { index: number; importance: number }[]).map(
    ({ index, importance }) => ({ index, importance, text: flat(sentences.itemAt(index).out()) }),
  );
  const words = (text: string): number => text.split(' ').filter((w) => /\p{L}/u.test(w)).length;
  const prose = scored.filter(({ text }) => {
    const letters = text.replace(/[^\p{L}]/gu, '').length / Math.max(1, text.replace(/\s/g, '').length);
    return letters >= 0.6 && words(text) >= 2 && !/https?:|www\.|@|wrote:/i.test(text);
  });
  // Prefer sentences of a normal length; a text without any falls back to its other prose.
  const normal = prose.filter(({ text }) => words(text) >= SUMMARY_MIN_WORDS && words(text) <= SUMMARY_MAX_WORDS);
  const candidates = normal.length > 0 ? normal : prose;
  const chosen = candidates
    .sort((a, b) => b.importance - a.importance || a.index - b.index)
    .slice(0, count)
    .sort((a, b) => a.index - b.index)
    .map(({ text }) => text);
  const summary = chosen.length > 0 ? chosen.join(' ') : flat(sentences.itemAt(0).out());
  if (summary === '') return null;
  return summary.length > SUMMARY_MAX_CHARS ? `${summary.slice(0, SUMMARY_MAX_CHARS - 3).trimEnd()}...` : summary;
}

function flat(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
