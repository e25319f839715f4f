import { breaksTaboo, stem, words } from './taboo-rules.js';
import type { Card } from './types.js';

/**
 * The offline players: no model, no randomness, so a game always gives the same transcript.
 *
 * - The hinter says its card's prepared clues in order, skipping any that breaks the taboo.
 * - The guesser knows a small list of words, each with words that call it to mind; it guesses
 *   the word whose associations the round's hints mention most, not guessed yet this round
 *   (ties go to the word listed first).
 */

/** The clue for `turn` (1-based) of `card`: its `turn`-th fair clue. */
export function ruleBasedHint(card: Card, turn: number): string {
  const fair = card.clues.filter((clue) => breaksTaboo(clue, card) === undefined);
  return fair[turn - 1] ?? 'I have no more clues: try another word';
}

/** What the rule-based guesser knows: a word and the words that call it to mind. */
const KNOWLEDGE: readonly { word: string; cues: readonly string[] }[] = [
  { word: 'moon', cues: ['gravity', 'night', 'tide', 'orbit', 'crater', 'apollo', 'sky', 'full'] },
  { word: 'apple', cues: ['gravity', 'doctor', 'day', 'granny', 'smith', 'green', 'orchard', 'cider', 'core'] },
  { word: 'banana', cues: ['yellow', 'monkey', 'peel', 'split', 'tropical'] },
  { word: 'piano', cues: ['chopin', '88', 'ivory', 'grand', 'concert', 'stage', 'pedal', 'hammer', 'string'] },
  { word: 'guitar', cues: ['string', 'chord', 'rock', 'fret', 'concert', 'stage', 'band'] },
  { word: 'earthquake', cues: ['shake', 'richter', 'fault', 'ground', 'pompeii', 'destroyed'] },
  { word: 'volcano', cues: ['vesuvius', 'pompeii', 'etna', 'sicily', 'active', 'molten', 'rock', 'crater', 'hot'] },
  { word: 'penguin', cues: ['waddle', 'swim', 'fish', 'emperor', 'huddle', 'polar', 'winter', 'waiter', 'suit'] },
  { word: 'seal', cues: ['swim', 'fish', 'polar', 'cold', 'flipper', 'bark'] },
  { word: 'compass', cues: ['hiker', 'sailor', 'way', 'find', 'n', 'e', 's', 'w', 'circle', 'geometry', 'draw'] },
  { word: 'anchor', cues: ['sailor', 'ship', 'rope', 'harbor', 'coast', 'chain'] },
  { word: 'map', cues: ['find', 'way', 'road', 'atlas', 'legend'] },
  { word: 'lamp', cues: ['lamp', 'night', 'bulb', 'shade', 'desk'] },
];

/** The guess for a round whose hints so far are `hints`, `guessed` being this round's earlier guesses. */
export function ruleBasedGuess(hints: readonly string[], guessed: readonly string[]): string {
  const heard = new Set(hints.flatMap(words));
  const tried = new Set(guessed.map((g) => g.toLowerCase()));
  let best: { word: string; score: number } | undefined;
  for (const { word, cues } of KNOWLEDGE) {
    if (tried.has(word)) continue;
    const score = cues.filter((cue) => heard.has(stem(cue))).length;
    if (!best || score > best.score) best = { word, score };
  }
  return best?.word ?? 'pass';
}
