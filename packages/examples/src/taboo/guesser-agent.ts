import { defineAgent, Node } from '@queueflow/runtime';
import { llmConfigFromEnv } from '../utils/llm-client.js';
import { llmGuess } from '../utils/llm-taboo.js';
import { traceExec } from './exec-trace.js';
import { ruleBasedGuess } from './rule-based-players.js';
import type { GuesserState, PlayerSettings, Source, TabooSaid, ToGuesser, ToHinter } from './types.js';

/** What the guesser's turn reads: its message, and for a hint the round's hints and earlier guesses. */
export interface GuesserPlan {
  messageId: string;
  message: ToGuesser;
  settings: PlayerSettings;
  hints: string[];
  guessed: string[];
}

/** What the guesser's `exec` found. */
export type GuesserMove = { guess?: string; source: Source };

/**
 * The guesser's turn, one per message: `join` sets how it plays; a hint is answered with a guess
 * (`exec`: the rule-based guesser, or the model when `players` is `llm`, the rule-based guess
 * standing in after the last failed try), which `post` sends back to the hinter that sent the
 * hint (`message.from`) and says on the turn's stream; `end` closes its log.
 */
class GuesserTurn extends Node<GuesserState> {
  override prep(state: GuesserState): GuesserPlan {
    const { id, body } = this.message!;
    const message = body as unknown as ToGuesser;
    // A hint of a new round starts a fresh memory of hints and guesses.
    const sameRound = message.type === 'hint' && message.round === state.round;
    return {
      messageId: id,
      message,
      settings: state.settings,
      hints: [...(sameRound ? state.hints : []), ...(message.type === 'hint' ? [message.hint] : [])],
      guessed: sameRound ? [...state.guesses] : [],
    };
  }

  override async exec({ messageId, message, settings, hints, guessed }: GuesserPlan): Promise<GuesserMove> {
    if (message.type !== 'hint') return { source: 'rules' };
    await traceExec(settings, 'guesser', { messageId, ...message });
    const llm = settings.players === 'llm' ? llmConfigFromEnv() : null;
    if (!llm) return { guess: ruleBasedGuess(hints, guessed), source: 'rules' };
    const onToken = (token: string): void =>
      this.emit({ agent: 'guesser', round: message.round, turn: message.turn, token } satisfies TabooSaid);
    return { guess: await llmGuess(llm, { hints, wrongGuesses: guessed }, this.signal, onToken), source: 'llm' };
  }

  override execFallback({ hints, guessed }: GuesserPlan): GuesserMove {
    return { guess: ruleBasedGuess(hints, guessed), source: 'rules' };
  }

  override async post(state: GuesserState, plan: GuesserPlan, move: GuesserMove): Promise<undefined> {
    const { message, messageId } = plan;
    if (message.type === 'join') state.settings = message.settings;
    else state.received.push(messageId);
    if (message.type === 'end') state.ended = message.reason;
    if (message.type !== 'hint' || state.ended) return undefined;
    const { round, turn, hint } = message;
    const guess = move.guess!;
    Object.assign(state, { round, hints: plan.hints, guesses: [...plan.guessed, guess] });
    state.log.push({ round, turn, hint, guess, source: move.source });
    await this.send(this.message!.from!, { type: 'guess', round, turn, guess } satisfies ToHinter);
    this.emit({ agent: 'guesser', round, turn, text: guess } satisfies TabooSaid);
    return undefined;
  }
}

/** The guesser, keyed by game id: `tabooGuesser.ref(game)`. */
export const tabooGuesser = defineAgent('taboo-guesser', {
  state: (): GuesserState => ({ settings: {}, round: 0, hints: [], guesses: [], log: [], received: [] }),
  // Tries of `exec` (a model call may fail), 1 s apart.
  turn: () => new GuesserTurn({ name: 'guess', maxRetries: 3, wait: 1 }),
});
