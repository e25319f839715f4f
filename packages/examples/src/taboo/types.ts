/**
 * The Taboo word game as two keyed agents: a hinter describes a secret word without saying it or
 * any of its forbidden words; a guesser guesses from the hints; a round ends when the guess is
 * right or the turns run out. Everything here is plain JSON (type aliases, which TypeScript
 * takes as `Json`): it travels in messages and lives in the agents' states.
 */

/** A card: the secret word, the words the hinter may not say, and the hinter's prepared clues. */
export type Card = {
  word: string;
  forbidden: string[];
  /** Clues in the order the rule-based hinter tries them; clues that break the rules are skipped. */
  clues: string[];
};

/** Who plays: the rule-based players (offline, deterministic) or a model (OpenAI-compatible endpoint). */
export type Players = 'rules' | 'llm';

/** What actually produced a hint or a guess (`llm` may fall back to `rules`). */
export type Source = 'rules' | 'llm';

/** Why a game ended: every card played, or the guesser went quiet. */
export type EndReason = 'played' | 'timeout';

/** How one agent plays, from the message that starts its game. */
export type PlayerSettings = {
  /** @defaultValue 'rules' */
  players?: Players;
  /** Extra time each `exec` takes, in ms: a slow agent, for demos and the fault test. @defaultValue 0 */
  execMs?: number;
  /**
   * A directory where each `exec` appends `<pid> <message id> r<round> t<turn>` to
   * `<agent>.log`: which process holds which message (the fault test reads it).
   */
  markerDir?: string;
};

/** To the hinter: the start of the game (from the client), then the guesses. */
export type ToHinter =
  | ({ type: 'start' } & Pick<HinterState, 'cards' | 'maxTurns' | 'turnTimeoutMs' | 'settings'>)
  | { type: 'guess'; round: number; turn: number; guess: string };

/** To the guesser: how it plays (from the client), then the hints and the end (from the hinter). */
export type ToGuesser =
  | { type: 'join'; settings: PlayerSettings }
  | { type: 'hint'; round: number; turn: number; hint: string }
  | { type: 'end'; reason: EndReason; solved: number; rounds: number };

/** One line of the game, as the hinter (who also referees) records it. */
export type TranscriptEntry =
  | { kind: 'hint'; round: number; turn: number; text: string; source: Source }
  | { kind: 'guess'; round: number; turn: number; text: string; correct: boolean }
  | { kind: 'round'; round: number; word: string; solved: boolean; turns: number }
  | { kind: 'end'; reason: EndReason; solved: number; rounds: number };

/** One line of the guesser's own view. */
export interface GuesserEntry {
  round: number;
  turn: number;
  hint: string;
  guess: string;
  source: Source;
}

/** The hinter's state: the game it referees, from its start (the cards are its secret), and the game so far. */
export interface HinterState {
  cards: Card[];
  /** Hints per card before the round is lost. */
  maxTurns: number;
  /** How long it waits for a guess before it ends the game, in ms. */
  turnTimeoutMs: number;
  settings: PlayerSettings;
  /** The card being played, from 1; 0 before the start. */
  round: number;
  transcript: TranscriptEntry[];
  solved: number;
  /** Ids of the guesses its turns handled. */
  received: string[];
  ended?: EndReason;
}

/** The guesser's state: what it knows of the current round, and its log. */
export interface GuesserState {
  settings: PlayerSettings;
  round: number;
  hints: string[];
  /** Its guesses this round (each was wrong, or the round would have moved on). */
  guesses: string[];
  log: GuesserEntry[];
  /** Ids of the hints and the end its turns handled. */
  received: string[];
  ended?: EndReason;
}

/**
 * What an agent says on its turn's stream (`this.emit`): a line it said (`text`), a piece of a
 * model's answer as it streams (`token`), or the hinter's end of the game.
 */
export type TabooSaid =
  | ({ agent: 'hinter' | 'guesser'; round: number; turn: number } & ({ text: string } | { token: string }))
  | { agent: 'hinter'; end: EndReason; solved: number; rounds: number };
