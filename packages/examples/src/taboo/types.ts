/**
 * The Taboo word game as two agents: a hinter describes a secret word without saying it or any
 * of its forbidden words; a guesser guesses from the hints; a round ends when the guess is right
 * or the turns run out. Everything here is plain JSON: it travels in messages and in `shared`.
 */

/** A card: the secret word, the words the hinter may not say, and the hinter's prepared clues. */
export interface Card {
  word: string;
  forbidden: string[];
  /** Clues in the order the rule-based hinter tries them; clues that break the rules are skipped. */
  clues: string[];
}

/** Who plays: the rule-based players (offline, deterministic) or a model (OpenAI-compatible endpoint). */
export type Players = 'rules' | 'llm';

/** What actually produced a hint or a guess (`llm` may fall back to `rules`). */
export type Source = 'rules' | 'llm';

/** Hinter → guesser. */
export type ToGuesser =
  | { type: 'hint'; round: number; turn: number; hint: string }
  | { type: 'end'; reason: EndReason; solved: number; rounds: number };

/** Guesser → hinter. */
export interface ToHinter {
  type: 'guess';
  round: number;
  turn: number;
  guess: string;
}

/** Why a game ended: every card played, or the other agent went quiet. */
export type EndReason = 'played' | 'timeout';

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

/** Params both agents take (each run has its own). */
export interface AgentParams {
  /** The game's id: the agents' addresses are `taboo.<game>.hinter` and `taboo.<game>.guesser`. */
  game: string;
  /** @defaultValue 'rules' */
  players?: Players;
  /** How long an agent waits for the other's message before it ends the game, in ms. @defaultValue 120000 */
  turnTimeoutMs?: number;
  /** Extra time each `exec` takes, in ms: a slow agent, for demos and the fault test. @defaultValue 0 */
  execMs?: number;
  /**
   * A directory where each `exec` appends `<pid> <message id> r<round> t<turn>` to
   * `<agent>.log`: which process holds which message (the fault test reads it).
   */
  markerDir?: string;
  [key: string]: unknown;
}

/** The hinter's `shared`: the cards to play (its secret) and the game so far. */
export interface HinterShared {
  cards: Card[];
  maxTurns: number;
  /** Index of the card being played. */
  round: number;
  transcript: TranscriptEntry[];
  solved: number;
  /** Ids of the messages its committed steps consumed. */
  received: string[];
  ended?: EndReason;
}

/** The guesser's `shared`: what it knows of the current round, and its log. */
export interface GuesserShared {
  round: number;
  hints: string[];
  /** Its guesses this round (each was wrong, or the round would have moved on). */
  guesses: string[];
  log: GuesserEntry[];
  received: string[];
  ended?: EndReason;
}

/** The mailbox address of one agent of a game. */
export function agentAddress(game: string, agent: 'hinter' | 'guesser'): string {
  return `taboo.${game}.${agent}`;
}

/**
 * What an agent says on its run's stream (`this.emit`): a line it said (`text`), a piece of a
 * model's answer as it streams (`token`), or the hinter's end of the game.
 */
export type TabooSaid =
  | ({ agent: 'hinter' | 'guesser'; round: number; turn: number } & ({ text: string } | { token: string }))
  | { agent: 'hinter'; end: EndReason; solved: number; rounds: number };
