import { nanoid } from 'nanoid';
import {
  QueueflowError,
  type Engine,
  type Flow,
  type JsonObject,
  type RunResult,
  type StreamEntry,
} from '@queueflow/runtime';
import { awaitRuns } from '../utils/await-runs.js';
import { DEFAULT_TURN_TIMEOUT_MS } from './hinter-agent.js';
import { cardsFor } from './taboo-deck.js';
import { tabooGuesser, tabooHinter } from './taboo-flows.js';
import type {
  AgentParams,
  GuesserEntry,
  GuesserShared,
  HinterShared,
  Players,
  TabooSaid,
  TranscriptEntry,
} from './types.js';

export interface PlayTabooOptions {
  /**
   * Where the agents run: an engine (LocalEngine, or RedisEngine whose workers load
   * `taboo-flows.js`), or, when absent, `flow.run` in this process with its in-memory mailboxes.
   */
  engine?: Engine;
  /** The cards to play, by word. @defaultValue the whole deck */
  words?: readonly string[];
  /** Hints per card before the round is lost. @defaultValue 3 */
  maxTurns?: number;
  /** @defaultValue 'rules' */
  players?: Players;
  /** The game's id (its mailbox addresses). @defaultValue a fresh one */
  game?: string;
  /** How long an agent waits for the other before it ends the game, in ms. @defaultValue 120000 */
  turnTimeoutMs?: number;
  /** Extra params of the hinter's run (`execMs`, `markerDir`). */
  hinter?: Pick<AgentParams, 'execMs' | 'markerDir'>;
  /** Extra params of the guesser's run. */
  guesser?: Pick<AgentParams, 'execMs' | 'markerDir'>;
  /** Called with the agents' run ids once both runs have started (engines only). */
  onStart?: (runs: { hinter: string; guesser: string }) => void;
  /**
   * Called with what each agent says as it says it (their runs' streams: `this.emit` in the
   * agents): through `engine.stream` on an engine, through `flow.run`'s `onEmit` without one.
   * Entries of a try that failed come too, with their `attempt`.
   */
  onSay?: (said: TabooSaid, entry: StreamEntry) => void;
  /**
   * Engines only: aborting it cancels both agents' runs and rejects once the cancels have been
   * sent (e.g. on Ctrl-C), so the engine may be closed right after. `flow.run` cannot be stopped.
   */
  signal?: AbortSignal;
}

/** A finished game. */
export interface TabooGame {
  game: string;
  /** The game as the hinter (the referee) recorded it. */
  transcript: TranscriptEntry[];
  /** The guesser's own view: each hint it got and its guess. */
  guesserLog: GuesserEntry[];
  solved: number;
  rounds: number;
  /** The agents' runs (engines only) and the ids of the messages each consumed. */
  hinter: { runId?: string; received: string[] };
  guesser: { runId?: string; received: string[] };
}

/** The hinter's `shared` at the start of a game. */
export function createHinterShared(words?: readonly string[], maxTurns = 3): HinterShared {
  if (!Number.isInteger(maxTurns) || maxTurns < 1)
    throw new TypeError(`expected \`maxTurns\` to be an integer from 1 and up, got ${maxTurns}`);
  return { cards: cardsFor(words), maxTurns, round: 0, transcript: [], solved: 0, received: [] };
}

/** The guesser's `shared` at the start of a game. */
export function createGuesserShared(): GuesserShared {
  return { round: 0, hints: [], guesses: [], log: [], received: [] };
}

/**
 * Plays one game of Taboo: starts the hinter and the guesser, each a flow looping on its own
 * mailbox, and waits for both to finish. The agents only talk through their mailboxes, so the
 * same game runs in this process or with each agent's steps on any queueflow worker.
 *
 * @throws Error when an agent's run does not complete (its error says why); QueueflowError
 *   `RUN_CANCELLED` when `signal` aborts (see {@link awaitRuns}).
 * @example
 * ```ts
 * const game = await playTaboo({ words: ['apple', 'piano'] });                // flow.run, offline players
 * const onWorkers = await playTaboo({ engine: new RedisEngine({ flows: [tabooHinter, tabooGuesser] }) });
 * console.log(formatTranscript(game.transcript));
 * ```
 */
export async function playTaboo(options: PlayTabooOptions = {}): Promise<TabooGame> {
  const game = options.game ?? nanoid(10);
  const base: AgentParams = {
    game,
    players: options.players ?? 'rules',
    turnTimeoutMs: options.turnTimeoutMs ?? DEFAULT_TURN_TIMEOUT_MS,
  };
  const hinterParams: AgentParams = { ...base, ...options.hinter };
  const guesserParams: AgentParams = { ...base, ...options.guesser };
  const hinterShared = createHinterShared(options.words, options.maxTurns);
  const guesserShared = createGuesserShared();

  let hinter: { shared: HinterShared; runId?: string };
  let guesser: { shared: GuesserShared; runId?: string };
  const { engine } = options;
  if (engine) {
    if (options.signal?.aborted) {
      throw new QueueflowError('RUN_CANCELLED', "the game was cancelled before its agents' runs started", {
        cause: options.signal.reason,
      });
    }
    const [g, h] = [
      await engine.start(tabooGuesser, guesserShared, { params: asJson(guesserParams) }),
      await engine.start(tabooHinter, hinterShared, { params: asJson(hinterParams) }),
    ];
    options.onStart?.({ hinter: h.id, guesser: g.id });
    const onSay = options.onSay;
    // Each agent's stream, followed live; each ends when its run ends.
    const following = onSay ? [h, g].map((handle) => follow(engine, handle.id, onSay)) : [];
    const [hinterResult, guesserResult] = await awaitRuns(engine, [h, g], options.signal);
    await Promise.all(following);
    hinter = { shared: completed('hinter', hinterResult), runId: h.id };
    guesser = { shared: completed('guesser', guesserResult), runId: g.id };
  } else {
    const onEmit = options.onSay && ((entry: StreamEntry) => options.onSay!(entry.data as TabooSaid, entry));
    await Promise.all([
      (tabooHinter.build() as Flow<HinterShared>).setParams(hinterParams).run(hinterShared, onEmit ? { onEmit } : {}),
      (tabooGuesser.build() as Flow<GuesserShared>)
        .setParams(guesserParams)
        .run(guesserShared, onEmit ? { onEmit } : {}),
    ]);
    hinter = { shared: hinterShared };
    guesser = { shared: guesserShared };
  }
  const end = hinter.shared.transcript.at(-1);
  return {
    game,
    transcript: hinter.shared.transcript,
    guesserLog: guesser.shared.log,
    solved: hinter.shared.solved,
    rounds: end?.kind === 'end' ? end.rounds : 0,
    hinter: { ...(hinter.runId ? { runId: hinter.runId } : {}), received: hinter.shared.received },
    guesser: { ...(guesser.runId ? { runId: guesser.runId } : {}), received: guesser.shared.received },
  };
}

/** Hands every entry of run `runId`'s stream to `onSay` until the run ends (a view: errors end it quietly). */
async function follow(
  engine: Engine,
  runId: string,
  onSay: (said: TabooSaid, entry: StreamEntry) => void,
): Promise<void> {
  try {
    for await (const entry of engine.stream(runId)) if (!entry.restart) onSay(entry.data as TabooSaid, entry);
  } catch {
    // The engine closed, or the run expired: the game's own wait reports real trouble.
  }
}

/** Params as the engines take them (`RunOptions.params` is a JsonObject): unset fields dropped. */
function asJson(params: AgentParams): JsonObject {
  return JSON.parse(JSON.stringify(params)) as JsonObject;
}

function completed<S extends object>(agent: string, result: RunResult<S>): S {
  if (result.status !== 'completed') {
    const why = result.error
      ? `${result.error.message}${result.error.node ? ` (node ${result.error.node})` : ''}`
      : result.status;
    throw new Error(`the ${agent}'s run ${result.id} ended ${result.status}: ${why}`);
  }
  return result.shared;
}

/** The transcript as text, one line per hint, guess and round. */
export function formatTranscript(transcript: readonly TranscriptEntry[]): string {
  const lines: string[] = [];
  for (const entry of transcript) {
    switch (entry.kind) {
      case 'hint':
        if (entry.turn === 1) lines.push(`Round ${entry.round}`);
        lines.push(`  hinter  ${entry.turn}: ${entry.text}`);
        break;
      case 'guess':
        lines.push(`  guesser ${entry.turn}: ${entry.text} ${entry.correct ? '✓' : '✗'}`);
        break;
      case 'round':
        lines.push(
          `  the word was '${entry.word}': ${entry.solved ? `solved in ${entry.turns} turn${entry.turns === 1 ? '' : 's'}` : 'not guessed, out of turns'}`,
          '',
        );
        break;
      case 'end':
        lines.push(
          entry.reason === 'played'
            ? `Game over: ${entry.solved} of ${entry.rounds} words guessed`
            : `Game ended: the guesser stopped answering (${entry.solved} of ${entry.rounds} words guessed)`,
        );
        break;
    }
  }
  return lines.join('\n');
}
