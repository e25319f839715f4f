import { setTimeout as sleep } from 'node:timers/promises';
import { nanoid } from 'nanoid';
import { LocalEngine, QueueflowError, type AgentInfo, type Engine, type StreamEntry } from '@queueflow/runtime';
import { tabooGuesser } from './guesser-agent.js';
import { DEFAULT_TURN_TIMEOUT_MS, tabooHinter } from './hinter-agent.js';
import { cardsFor } from './taboo-deck.js';
import type {
  GuesserEntry,
  GuesserState,
  HinterState,
  PlayerSettings,
  Players,
  TabooSaid,
  ToGuesser,
  ToHinter,
  TranscriptEntry,
} from './types.js';

/** How often the client looks at the agents (and for new turns to follow), in ms. */
const POLL_MS = 25;

export interface PlayTabooOptions {
  /**
   * Where the agents run: an engine given `tabooHinter` and `tabooGuesser` (a LocalEngine, or a
   * RedisEngine whose workers load `taboo-flows.js`). @defaultValue a LocalEngine of its own, closed after the game
   */
  engine?: Engine;
  /** The cards to play, by word. @defaultValue the whole deck */
  words?: readonly string[];
  /** Hints per card before the round is lost. @defaultValue 3 */
  maxTurns?: number;
  /** @defaultValue 'rules' */
  players?: Players;
  /** The game's id: the key of both agents. @defaultValue a fresh one */
  game?: string;
  /** How long the hinter waits for a guess before it ends the game, in ms. @defaultValue 120000 */
  turnTimeoutMs?: number;
  /** Extra settings of the hinter (`execMs`, `markerDir`). */
  hinter?: Pick<PlayerSettings, 'execMs' | 'markerDir'>;
  /** Extra settings of the guesser. */
  guesser?: Pick<PlayerSettings, 'execMs' | 'markerDir'>;
  /** Called with the agents' addresses once the game has started. */
  onStart?: (agents: { hinter: string; guesser: string }) => void;
  /**
   * Called with what each agent says as it says it: the streams of their turns' runs
   * (`engine.stream`), turn after turn as the game's conversation lists them. Entries of a try
   * that failed come too, with their `attempt`.
   */
  onSay?: (said: TabooSaid, entry: StreamEntry) => void;
  /**
   * Called when following the streams for `onSay` failed (a stream read refused, the engine
   * closed): `onSay` gets nothing more, and the game itself goes on.
   */
  onSayStopped?: (error: unknown) => void;
  /**
   * Aborting it deletes both agents (a running turn is cancelled) and rejects once that is done
   * (e.g. on Ctrl-C), so the engine may be closed right after.
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
  /** The agents' addresses and the ids of the messages each handled (guesses; hints and the end). */
  hinter: { ref: string; received: string[] };
  guesser: { ref: string; received: string[] };
}

/**
 * Plays one game of Taboo: sends the guesser how it plays and the hinter the game to referee,
 * both keyed by the game's id in one conversation, then waits until the hinter has ended the game
 * and both agents are idle. The agents only talk through messages, each turn handling one, so the
 * same game runs in this process or with the turns on any queueflow worker.
 *
 * @throws Error when a turn of either agent failed (its error says why); QueueflowError
 *   `RUN_CANCELLED` when `signal` aborts.
 * @example
 * ```ts
 * const game = await playTaboo({ words: ['apple', 'piano'] });                // a LocalEngine of its own
 * const agents = [tabooHinter, tabooGuesser];
 * const onWorkers = await playTaboo({ engine: new RedisEngine({ flows: [], agents }) });
 * console.log(formatTranscript(game.transcript));
 * ```
 */
export async function playTaboo(options: PlayTabooOptions = {}): Promise<TabooGame> {
  const { game = nanoid(10), maxTurns = 3, players = 'rules' } = options;
  if (!Number.isInteger(maxTurns) || maxTurns < 1)
    throw new TypeError(`expected \`maxTurns\` to be an integer from 1 and up, got ${maxTurns}`);
  const start: ToHinter = {
    type: 'start',
    cards: cardsFor(options.words),
    maxTurns,
    turnTimeoutMs: options.turnTimeoutMs ?? DEFAULT_TURN_TIMEOUT_MS,
    settings: { players, ...options.hinter },
  };
  const join: ToGuesser = { type: 'join', settings: { players, ...options.guesser } };
  const refs = { hinter: tabooHinter.ref(game), guesser: tabooGuesser.ref(game) };
  const conversation = { id: `taboo.${game}` };
  const engine = options.engine ?? new LocalEngine({ flows: [], agents: [tabooHinter, tabooGuesser] });
  let over = false;
  let following: Promise<void> | undefined;
  try {
    if (await engine.agent(refs.hinter)) throw new Error(`game '${game}' was played on this engine already`);
    await engine.send(refs.guesser, join, { conversation });
    await engine.send(refs.hinter, start, { conversation });
    options.onStart?.(refs);
    if (options.onSay)
      following = follow(engine, conversation.id, options.onSay, () => over).catch((error: unknown) =>
        options.onSayStopped?.(error),
      );
    const [hinter, guesser] = await untilOver(engine, game, refs, options.signal);
    const end = hinter.transcript.at(-1);
    return {
      game,
      transcript: hinter.transcript,
      guesserLog: guesser.log,
      solved: hinter.solved,
      rounds: end?.kind === 'end' ? end.rounds : 0,
      hinter: { ref: refs.hinter, received: hinter.received },
      guesser: { ref: refs.guesser, received: guesser.received },
    };
  } finally {
    over = true;
    await following;
    if (!options.engine) await engine.close();
  }
}

/**
 * The agents' states once the hinter has ended the game and neither has a turn running or a
 * message waiting (the guesser's last turn, on the end, has committed).
 * @throws Error when a turn of either failed; QueueflowError `RUN_CANCELLED` when `signal` aborts.
 */
async function untilOver(
  engine: Engine,
  game: string,
  refs: { hinter: string; guesser: string },
  signal: AbortSignal | undefined,
): Promise<[HinterState, GuesserState]> {
  const idle = (info: AgentInfo | undefined): boolean => !!info && info.running === undefined && info.inbox === 0;
  for (; ; await sleep(POLL_MS)) {
    if (signal?.aborted) {
      // The hinter first: a guess sent to it afterwards finds a game not started, and is ignored.
      for (const ref of [refs.hinter, refs.guesser]) await engine.deleteAgent(ref);
      const what = `game ${game} cancelled: agents ${refs.hinter} and ${refs.guesser} deleted`;
      throw new QueueflowError('RUN_CANCELLED', what, { cause: signal.reason });
    }
    const [hinter, guesser] = await Promise.all([engine.agent(refs.hinter), engine.agent(refs.guesser)]);
    const failed = [...(hinter?.failed ?? []), ...(guesser?.failed ?? [])][0];
    if (failed) throw new Error(`the turn ${failed.runId} of the game failed: ${failed.error.message}`);
    const state = hinter?.state as unknown as HinterState | undefined;
    if (state?.ended && idle(hinter) && idle(guesser)) return [state, guesser!.state as unknown as GuesserState];
  }
}

/**
 * Hands every entry of the streams of the conversation's turns to `onSay`, one turn after the
 * other in the order they started (the game's turns follow each other), until `over()` (a last
 * look after it). A view: an error ends it (rejects), and the game goes on.
 */
async function follow(
  engine: Engine,
  conversation: string,
  onSay: (said: TabooSaid, entry: StreamEntry) => void,
  over: () => boolean,
): Promise<void> {
  for (let seen = 0; ; await sleep(POLL_MS)) {
    const last = over();
    const turns = (await engine.conversation(conversation))?.messages.slice(seen) ?? [];
    seen += turns.length;
    for (const { runId } of turns)
      for await (const entry of engine.stream(runId)) if (!entry.restart) onSay(entry.data as TabooSaid, entry);
    if (last) return;
  }
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
