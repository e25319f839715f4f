import type { Card } from './types.js';

/**
 * The referee's rules, shared by both players: how text is split into words, when a hint breaks
 * the taboo, and when a guess is right. Plain functions of their input: deterministic.
 */

/** A word reduced to a comparable form: lower case, without a plural `s`/`es`. */
export function stem(word: string): string {
  const w = word.toLowerCase();
  if (w.length > 4 && /(ches|shes|sses|xes)$/.test(w)) return w.slice(0, -2);
  if (w.length > 3 && w.endsWith('s') && !w.endsWith('ss')) return w.slice(0, -1);
  return w;
}

/** The stemmed words of `text` (letters and digits; apostrophes dropped). */
export function words(text: string): string[] {
  return (
    text
      .toLowerCase()
      .replace(/['’]/g, '')
      .match(/[a-z0-9]+/g) ?? []
  ).map(stem);
}

/**
 * The secret or forbidden word that `hint` says (compared stem to stem, so "trees" says
 * "tree"), or `undefined` when the hint is fair.
 */
export function breaksTaboo(hint: string, card: Pick<Card, 'word' | 'forbidden'>): string | undefined {
  const said = new Set(words(hint));
  return [card.word, ...card.forbidden].find((taboo) => words(taboo).some((w) => said.has(w)));
}

/** Whether `guess` names `word` (case, surrounding punctuation and a plural `s` aside). */
export function isRightGuess(guess: string, word: string): boolean {
  return words(guess).join(' ') === words(word).join(' ');
}
