import type { Card } from './types.js';

/**
 * The fixed deck of the offline game. Each card's first clue breaks its own taboo (the
 * rule-based hinter shows the rule by skipping it); the guesser knows every word but
 * `lighthouse`, so one round runs out of turns.
 */
export const TABOO_DECK: readonly Card[] = [
  {
    word: 'apple',
    forbidden: ['fruit', 'red', 'tree', 'pie', 'iphone'],
    clues: [
      'A red fruit that grows on a tree',
      'Newton thought about gravity when he saw one drop',
      'One a day keeps the doctor away',
      'Granny Smith is a green kind',
    ],
  },
  {
    word: 'piano',
    forbidden: ['keys', 'music', 'instrument', 'play', 'black'],
    clues: [
      'You play it by pressing black and white keys',
      'Chopin wrote most of his pieces for it',
      'It has 88 of them, once made of ivory',
      'A grand one stands on the concert stage',
    ],
  },
  {
    word: 'volcano',
    forbidden: ['lava', 'mountain', 'erupt', 'magma', 'ash'],
    clues: [
      'A mountain that can erupt',
      'It destroyed Pompeii',
      'Etna in Sicily is an active one',
      'Molten rock pours out of its crater',
    ],
  },
  {
    word: 'penguin',
    forbidden: ['bird', 'antarctica', 'ice', 'fly', 'tuxedo'],
    clues: [
      'A bird that cannot fly',
      'It waddles on land and swims fast to catch fish',
      'The emperor kind huddles through the polar winter',
      'It looks like a waiter in a dinner suit',
    ],
  },
  {
    word: 'lighthouse',
    forbidden: ['light', 'sea', 'ship', 'tower', 'beam'],
    clues: [
      'A tower with a light for ships',
      'Its keeper lived on a rocky coast',
      'Sailors watched for its lamp to avoid the rocks',
      'Its lamp turns all night long',
    ],
  },
  {
    word: 'compass',
    forbidden: ['north', 'needle', 'direction', 'magnet', 'map'],
    clues: [
      'Its needle points north',
      'Hikers and sailors carry one to find their way',
      'It shows N, E, S and W',
      'In geometry class you draw circles with one',
    ],
  },
];

/**
 * The cards for `words` (in that order), or the whole deck when `words` is undefined.
 * @throws TypeError for an empty list (a game needs a card); Error naming a word that is not in the deck.
 */
export function cardsFor(words?: readonly string[]): Card[] {
  if (!words) return TABOO_DECK.map((card) => structuredClone(card));
  if (words.length === 0) throw new TypeError('expected `words` to name at least one card, got an empty list');
  return words.map((word) => {
    const card = TABOO_DECK.find((c) => c.word === word.toLowerCase());
    if (!card) throw new Error(`no card '${word}' in the deck (${TABOO_DECK.map((c) => c.word).join(', ')})`);
    return structuredClone(card);
  });
}
