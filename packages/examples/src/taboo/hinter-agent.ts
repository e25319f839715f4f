import { defineAgent, Node } from '@queueflow/runtime';
import { llmConfigFromEnv } from '../utils/llm-client.js';
import { llmHint } from '../utils/llm-taboo.js';
import { traceExec } from './exec-trace.js';
import { tabooGuesser } from './guesser-agent.js';
import { ruleBasedHint } from './rule-based-players.js';
import { breaksTaboo, isRightGuess } from './taboo-rules.js';
import type { Card, EndReason, HinterState, PlayerSettings, Source, TabooSaid, ToGuesser, ToHinter } from './types.js';

/** Default wait for a guess, in ms (a model may take a while per turn). */
export const DEFAULT_TURN_TIMEOUT_MS = 120_000;

/** The reminder a hint sets: no guess for it within `turnTimeoutMs` ends the game. */
const QUIET = 'quiet';

/** What the hinter's turn makes of its message: the guess it judged, and what comes next (none: ignored). */
export interface HinterPlan {
  settings: PlayerSettings;
  judged?: { messageId: string; round: number; turn: number; guess: string; correct: boolean };
  /** The round that this guess ended. */
  roundOver?: { round: number; word: string; solved: boolean; turns: number };
  next?:
    | { kind: 'hint'; round: number; turn: number; card: Card; previousHints: string[]; wrongGuesses: string[] }
    | { kind: 'end'; reason: EndReason };
}

/** What the hinter's `exec` found. */
export type HinterMove = { hint?: string; source: Source };

/**
 * The hinter's turn, also the referee's, one per message:
 *
 * - `prep` reads the message: the start sets the game up (its cards are the hinter's secret) and
 *   plans the first hint; a guess is judged, then comes another hint for this card, the first hint
 *   for the next card, or the end; the `quiet` reminder of a hint still unanswered ends the game.
 * - `exec` finds the hint: the card's next fair clue, or one from the model when `players` is
 *   `llm` (a clue that breaks the taboo fails the try; after the last try the rule-based clue
 *   stands in). A model's clue streams token by token on the turn's stream.
 * - `post` writes the transcript, sends the hint (or the end) to the guesser, and sets the
 *   `quiet` reminder: all of it commits with the turn, once.
 */
class HinterTurn extends Node<HinterState> {
  override prep(state: HinterState): HinterPlan {
    const { id, body, reminder } = this.message!;
    const message = body as unknown as ToHinter;
    const plan: HinterPlan = { settings: state.settings };
    if (state.ended) return plan; // the game is over: a late message changes nothing
    if (reminder === QUIET) {
      const last = state.transcript.at(-1); // still the hint the reminder was set for: no guess came
      if (last?.kind === 'hint' && JSON.stringify(body) === JSON.stringify([last.round, last.turn]))
        plan.next = { kind: 'end', reason: 'timeout' };
      return plan;
    }
    if (message.type === 'start') {
      if (state.round > 0) return plan;
      const { type: _, ...game } = message;
      Object.assign(state, game); // the cards are the hinter's secret
      return { settings: state.settings, next: hintFor(state, 1, 1) };
    }
    if (state.round === 0) return plan; // a guess before the start
    const card = state.cards[state.round - 1]!;
    const turn = hintsOf(state, state.round).length;
    const correct = isRightGuess(message.guess, card.word);
    plan.judged = { messageId: id, round: state.round, turn, guess: message.guess, correct };
    if (!correct && turn < state.maxTurns)
      return { ...plan, next: hintFor(state, state.round, turn + 1, message.guess) };
    plan.roundOver = { round: state.round, word: card.word, solved: correct, turns: turn };
    if (state.round < state.cards.length) return { ...plan, next: hintFor(state, state.round + 1, 1) };
    return { ...plan, next: { kind: 'end', reason: 'played' } };
  }

  override async exec({ settings, judged, next }: HinterPlan): Promise<HinterMove> {
    if (!next) return { source: 'rules' };
    const at = next.kind === 'hint' ? next : (judged ?? { round: 0, turn: 0 });
    await traceExec(settings, 'hinter', { messageId: judged?.messageId, round: at.round, turn: at.turn });
    if (next.kind !== 'hint') return { source: 'rules' };
    const llm = settings.players === 'llm' ? llmConfigFromEnv() : null;
    if (!llm) return { hint: ruleBasedHint(next.card, next.turn), source: 'rules' };
    const hint = await llmHint(
      llm,
      { ...next.card, previousHints: next.previousHints, wrongGuesses: next.wrongGuesses },
      this.signal,
      (token) => this.emit({ agent: 'hinter', round: next.round, turn: next.turn, token } satisfies TabooSaid),
    );
    const said = breaksTaboo(hint, next.card);
    if (said) throw new Error(`the model's clue says '${said}': ${hint}`);
    return { hint, source: 'llm' };
  }

  override execFallback({ next }: HinterPlan): HinterMove {
    return next?.kind === 'hint' ? { hint: ruleBasedHint(next.card, next.turn), source: 'rules' } : { source: 'rules' };
  }

  override async post(
    state: HinterState,
    { judged, roundOver, next }: HinterPlan,
    move: HinterMove,
  ): Promise<undefined> {
    if (judged) {
      state.received.push(judged.messageId);
      const { round, turn, guess: text, correct } = judged;
      state.transcript.push({ kind: 'guess', round, turn, text, correct });
    }
    if (roundOver) {
      state.transcript.push({ kind: 'round', ...roundOver });
      if (roundOver.solved) state.solved += 1;
    }
    const guesser = tabooGuesser.ref(this.agentKey!); // the game's guesser: same key
    if (next?.kind === 'hint') {
      const { round, turn } = next;
      state.round = round;
      state.transcript.push({ kind: 'hint', round, turn, text: move.hint!, source: move.source });
      await this.send(guesser, { type: 'hint', round, turn, hint: move.hint! } satisfies ToGuesser);
      this.remind(QUIET, { afterMs: state.turnTimeoutMs, body: [round, turn] }); // replaces the last hint's
      this.emit({ agent: 'hinter', round, turn, text: move.hint! } satisfies TabooSaid);
    } else if (next) {
      state.ended = next.reason;
      const rounds = state.transcript.filter((entry) => entry.kind === 'round').length;
      state.transcript.push({ kind: 'end', reason: next.reason, solved: state.solved, rounds });
      await this.send(guesser, { type: 'end', reason: next.reason, solved: state.solved, rounds } satisfies ToGuesser);
      this.cancelReminder(QUIET);
      this.emit({ agent: 'hinter', end: next.reason, solved: state.solved, rounds } satisfies TabooSaid);
    }
    return undefined;
  }
}

/** The plan of hint `turn` of `round`; `lastGuess` is a wrong guess not yet in the transcript. */
function hintFor(state: HinterState, round: number, turn: number, lastGuess?: string): NonNullable<HinterPlan['next']> {
  const wrongGuesses = state.transcript.flatMap((e) => (e.kind === 'guess' && e.round === round ? [e.text] : []));
  if (lastGuess !== undefined) wrongGuesses.push(lastGuess);
  return {
    kind: 'hint',
    round,
    turn,
    card: state.cards[round - 1]!,
    previousHints: hintsOf(state, round),
    wrongGuesses,
  };
}

function hintsOf(state: HinterState, round: number): string[] {
  return state.transcript.flatMap((e) => (e.kind === 'hint' && e.round === round ? [e.text] : []));
}

/** The hinter and referee, keyed by game id: `tabooHinter.ref(game)`. Its first message is the start. */
export const tabooHinter = defineAgent('taboo-hinter', {
  state: (): HinterState => ({
    cards: [],
    maxTurns: 0,
    turnTimeoutMs: DEFAULT_TURN_TIMEOUT_MS,
    settings: {},
    round: 0,
    transcript: [],
    solved: 0,
    received: [],
  }),
  // Tries of `exec` (a model call may fail or break the rules), 1 s apart.
  turn: () => new HinterTurn({ name: 'hint', maxRetries: 3, wait: 1 }),
});
