import { Node } from '@queueflow/runtime';
import { llmConfigFromEnv } from '../utils/llm-client.js';
import { llmGuess } from '../utils/llm-taboo.js';
import { traceExec } from './exec-trace.js';
import { DEFAULT_TURN_TIMEOUT_MS } from './hinter-agent.js';
import { ruleBasedGuess } from './rule-based-players.js';
import {
  agentAddress,
  type AgentParams,
  type EndReason,
  type GuesserShared,
  type Source,
  type TabooSaid,
  type ToGuesser,
  type ToHinter,
} from './types.js';

/** What the guesser's `prep` read: a hint to answer (with the round so far), the end, or nothing. */
export type GuesserTurn =
  | { kind: 'hint'; messageId: string; round: number; turn: number; hint: string; hints: string[]; guessed: string[] }
  | { kind: 'end'; messageId: string; reason: EndReason }
  | { kind: 'timeout' };

export interface GuesserMove {
  guess?: string;
  source: Source;
}

/**
 * The guesser: a node the flow loops on (`next`), one step per hint.
 *
 * - `prep` waits for the next message on `taboo.<game>.guesser`: a hint (a hint of a new round
 *   starts a fresh memory of hints and guesses) or the end of the game.
 * - `exec` guesses from the round's hints: the rule-based guesser, or the model when `players`
 *   is `llm` (the rule-based guess stands in after the last failed try).
 * - `post` keeps the round in `shared`, sends the guess to the hinter (it leaves when the step
 *   commits) and says it on the run's stream (`this.emit`); at the end of the game the flow goes
 *   `over`. A model's guess streams token by token from `exec`.
 */
export class GuesserAgent extends Node<GuesserShared, AgentParams> {
  override async prep(shared: GuesserShared): Promise<GuesserTurn> {
    const message = await this.receive(agentAddress(this.params.game, 'guesser'), {
      timeoutMs: this.params.turnTimeoutMs ?? DEFAULT_TURN_TIMEOUT_MS,
    });
    if (!message) return { kind: 'timeout' };
    const body = message.body as unknown as ToGuesser;
    if (body.type === 'end') return { kind: 'end', messageId: message.id, reason: body.reason };
    const sameRound = body.round === shared.round;
    return {
      kind: 'hint',
      messageId: message.id,
      round: body.round,
      turn: body.turn,
      hint: body.hint,
      hints: [...(sameRound ? shared.hints : []), body.hint],
      guessed: sameRound ? [...shared.guesses] : [],
    };
  }

  override async exec(turn: GuesserTurn): Promise<GuesserMove> {
    if (turn.kind !== 'hint') return { source: 'rules' };
    await traceExec(this.params, 'guesser', turn);
    const llm = this.params.players === 'llm' ? llmConfigFromEnv() : null;
    if (!llm) return { guess: ruleBasedGuess(turn.hints, turn.guessed), source: 'rules' };
    const onToken = (token: string): void =>
      this.emit({ agent: 'guesser', round: turn.round, turn: turn.turn, token } satisfies TabooSaid);
    return {
      guess: await llmGuess(llm, { hints: turn.hints, wrongGuesses: turn.guessed }, this.signal, onToken),
      source: 'llm',
    };
  }

  override execFallback(turn: GuesserTurn): GuesserMove {
    return turn.kind === 'hint'
      ? { guess: ruleBasedGuess(turn.hints, turn.guessed), source: 'rules' }
      : { source: 'rules' };
  }

  override async post(shared: GuesserShared, turn: GuesserTurn, move: GuesserMove): Promise<string> {
    if (turn.kind === 'timeout') {
      shared.ended = 'timeout';
      return 'over';
    }
    shared.received.push(turn.messageId);
    if (turn.kind === 'end') {
      shared.ended = turn.reason;
      return 'over';
    }
    const guess = move.guess!;
    shared.round = turn.round;
    shared.hints = turn.hints;
    shared.guesses = [...turn.guessed, guess];
    shared.log.push({ round: turn.round, turn: turn.turn, hint: turn.hint, guess, source: move.source });
    await this.send(agentAddress(this.params.game, 'hinter'), {
      type: 'guess',
      round: turn.round,
      turn: turn.turn,
      guess,
    } satisfies ToHinter);
    this.emit({ agent: 'guesser', round: turn.round, turn: turn.turn, text: guess } satisfies TabooSaid);
    return 'next';
  }
}
