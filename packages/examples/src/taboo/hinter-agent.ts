import { Node, type Message } from '@queueflow/runtime';
import { llmConfigFromEnv } from '../utils/llm-client.js';
import { llmHint } from '../utils/llm-taboo.js';
import { traceExec } from './exec-trace.js';
import { ruleBasedHint } from './rule-based-players.js';
import { breaksTaboo, isRightGuess } from './taboo-rules.js';
import {
  agentAddress,
  type AgentParams,
  type Card,
  type EndReason,
  type HinterShared,
  type Source,
  type ToGuesser,
  type TabooSaid,
  type ToHinter,
} from './types.js';

/** Default wait for the other agent, in ms (a model may take a while per turn). */
export const DEFAULT_TURN_TIMEOUT_MS = 120_000;

/** What the hinter's `prep` decided: the guess it judged, and what comes next. */
export interface HinterPlan {
  /** The guess this step handles (none at the start of the game, or after a timeout). */
  judged?: { messageId: string; round: number; turn: number; guess: string; correct: boolean };
  /** The round that this guess ended. */
  roundOver?: { round: number; word: string; solved: boolean; turns: number };
  next:
    | { kind: 'hint'; round: number; turn: number; card: Card; previousHints: string[]; wrongGuesses: string[] }
    | { kind: 'end'; reason: EndReason };
}

/** What the hinter's `exec` produced. */
export interface HinterMove {
  hint?: string;
  source: Source;
}

/**
 * The hinter, also the referee: a node the flow loops on (`next`), one step per message.
 *
 * - `prep` waits for the guesser's guess on `taboo.<game>.hinter` (not before the first hint),
 *   judges it and decides what comes next: another hint for this card, the first hint for the
 *   next card, or the end. Nothing before its `receive` has side effects: on an engine the step
 *   runs again from the start when the message comes.
 * - `exec` finds the hint: the card's next fair clue, or one from the model when `players` is
 *   `llm` (a clue that breaks the taboo fails the try; after the last try the rule-based clue
 *   stands in).
 * - `post` writes the transcript and sends the hint (or the end) to the guesser; the message
 *   leaves when the step commits. It also says the hint on the run's stream (`this.emit`, after
 *   the `receive`, so a step that parked says nothing twice); a model's clue streams token by
 *   token from `exec`.
 */
export class HinterAgent extends Node<HinterShared, AgentParams> {
  override async prep(shared: HinterShared): Promise<HinterPlan> {
    if (shared.transcript.length === 0) return { next: hintFor(shared, 1, 1) };
    const message = await this.receive(agentAddress(this.params.game, 'hinter'), {
      timeoutMs: this.params.turnTimeoutMs ?? DEFAULT_TURN_TIMEOUT_MS,
    });
    if (!message) return { next: { kind: 'end', reason: 'timeout' } };
    return judge(shared, message);
  }

  override async exec(plan: HinterPlan): Promise<HinterMove> {
    const { next } = plan;
    const at = next.kind === 'hint' ? next : (plan.judged ?? { round: 0, turn: 0 });
    await traceExec(this.params, 'hinter', { messageId: plan.judged?.messageId, round: at.round, turn: at.turn });
    if (next.kind !== 'hint') return { source: 'rules' };
    const llm = this.params.players === 'llm' ? llmConfigFromEnv() : null;
    if (!llm) return { hint: ruleBasedHint(next.card, next.turn), source: 'rules' };
    // The clue streams as the model writes it (whoever follows the run sees it come).
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

  override execFallback(plan: HinterPlan): HinterMove {
    const { next } = plan;
    return next.kind === 'hint' ? { hint: ruleBasedHint(next.card, next.turn), source: 'rules' } : { source: 'rules' };
  }

  override async post(shared: HinterShared, plan: HinterPlan, move: HinterMove): Promise<string> {
    const { judged, roundOver, next } = plan;
    if (judged) {
      shared.received.push(judged.messageId);
      shared.transcript.push({
        kind: 'guess',
        round: judged.round,
        turn: judged.turn,
        text: judged.guess,
        correct: judged.correct,
      });
    }
    if (roundOver) {
      shared.transcript.push({ kind: 'round', ...roundOver });
      if (roundOver.solved) shared.solved += 1;
    }
    const to = agentAddress(this.params.game, 'guesser');
    if (next.kind === 'hint') {
      shared.round = next.round;
      shared.transcript.push({
        kind: 'hint',
        round: next.round,
        turn: next.turn,
        text: move.hint!,
        source: move.source,
      });
      await this.send(to, { type: 'hint', round: next.round, turn: next.turn, hint: move.hint! } satisfies ToGuesser);
      this.emit({ agent: 'hinter', round: next.round, turn: next.turn, text: move.hint! } satisfies TabooSaid);
      return 'next';
    }
    shared.ended = next.reason;
    const rounds = shared.transcript.filter((entry) => entry.kind === 'round').length;
    shared.transcript.push({ kind: 'end', reason: next.reason, solved: shared.solved, rounds });
    await this.send(to, { type: 'end', reason: next.reason, solved: shared.solved, rounds } satisfies ToGuesser);
    this.emit({ agent: 'hinter', end: next.reason, solved: shared.solved, rounds } satisfies TabooSaid);
    return 'over';
  }
}

/** Judges the guess in `message` and plans what follows. */
function judge(shared: HinterShared, message: Message): HinterPlan {
  const body = message.body as unknown as ToHinter;
  const card = shared.cards[shared.round - 1]!;
  const turn = hintsOf(shared, shared.round).length;
  const correct = isRightGuess(body.guess, card.word);
  const judged = { messageId: message.id, round: shared.round, turn, guess: body.guess, correct };
  if (!correct && turn < shared.maxTurns) return { judged, next: hintFor(shared, shared.round, turn + 1, body.guess) };
  const roundOver = { round: shared.round, word: card.word, solved: correct, turns: turn };
  if (shared.round < shared.cards.length) return { judged, roundOver, next: hintFor(shared, shared.round + 1, 1) };
  return { judged, roundOver, next: { kind: 'end', reason: 'played' } };
}

/** The plan of hint `turn` of `round`; `lastGuess` is a wrong guess not yet in the transcript. */
function hintFor(shared: HinterShared, round: number, turn: number, lastGuess?: string): HinterPlan['next'] {
  const wrongGuesses = shared.transcript.flatMap((e) => (e.kind === 'guess' && e.round === round ? [e.text] : []));
  if (lastGuess !== undefined) wrongGuesses.push(lastGuess);
  return {
    kind: 'hint',
    round,
    turn,
    card: shared.cards[round - 1]!,
    previousHints: hintsOf(shared, round),
    wrongGuesses,
  };
}

function hintsOf(shared: HinterShared, round: number): string[] {
  return shared.transcript.flatMap((e) => (e.kind === 'hint' && e.round === round ? [e.text] : []));
}
