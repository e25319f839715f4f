#!/usr/bin/env node
/**
 * The Taboo game's command line: `npm run taboo -w @queueflow/examples -- [options]`. Embedded by
 * default (both agents on a LocalEngine in this process); with `--redis URL` the agents' turns run
 * on the workers started with `queueflow worker --flows packages/examples/dist/taboo/taboo-flows.js`.
 * The options are checked before the engines, the players and the model client load: a wrong one
 * fails at once.
 */
import { Command, InvalidArgumentError } from 'commander';
import type { Engine } from '@queueflow/runtime';
import { cardsFor, TABOO_DECK } from '../taboo/taboo-deck.js';
import type { Players } from '../taboo/types.js';
import { checkPrefixNeedsRedis, keyPrefix } from './prefix-option.js';
import { redactUrl } from './redact-url.js';
import { LiveTranscript } from './taboo-live.js';
import { CommandExit, runCommand } from './run-command.js';

interface CliOptions {
  redis?: string;
  prefix: string;
  words?: string[];
  turns: number;
  offline?: boolean;
  turnTimeout?: number;
}

/** How long the hinter's first turn may wait before the CLI says how to start workers. */
const NO_WORKER_HINT_MS = 10_000;

function positiveInteger(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1)
    throw new InvalidArgumentError(`expected an integer from 1 and up, got '${value}'`);
  return parsed;
}

/** `--words`: a comma-separated list of cards of the deck, at least one. */
function deckWords(value: string): string[] {
  const words = value
    .split(',')
    .map((w) => w.trim())
    .filter(Boolean);
  if (words.length === 0) {
    throw new InvalidArgumentError(
      `expected at least one word of the deck (${TABOO_DECK.map((c) => c.word).join(', ')})`,
    );
  }
  try {
    cardsFor(words);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return words;
}

const program = new Command()
  .name('taboo')
  .description(
    'Two agents play Taboo: a hinter describes a secret word without its forbidden words, a guesser guesses. ' +
      'Each is a queueflow keyed agent whose turn handles one message. Offline rule-based players by default; ' +
      'a model plays when OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL are set.',
  )
  .option(
    '--redis <url>',
    'run the agents on the queueflow workers using this Redis; start them with: ' +
      'npx queueflow worker --flows packages/examples/dist/taboo/taboo-flows.js --redis <url>',
  )
  .option('--prefix <prefix>', "with --redis: the workers' key prefix", keyPrefix, '{qf}')
  .option(
    '--words <list>',
    `the cards to play, comma-separated (deck: ${TABOO_DECK.map((c) => c.word).join(', ')})`,
    deckWords,
  )
  .option('--turns <n>', 'hints per card', positiveInteger, 3)
  .option('--offline', 'rule-based players even when an OpenAI-compatible endpoint is configured')
  .option('--turn-timeout <ms>', 'how long the hinter waits for a guess before it ends the game', positiveInteger);

async function main(): Promise<void> {
  const options = program.parse().opts<CliOptions>();
  checkPrefixNeedsRedis(program, options.redis);
  const [{ llmConfigFromEnv }, { formatTranscript, playTaboo }, { tabooGuesser, tabooHinter }] = await Promise.all([
    import('../utils/llm-client.js'),
    import('../taboo/play-taboo.js'),
    import('../taboo/taboo-flows.js'),
  ]);
  const players: Players = !options.offline && llmConfigFromEnv() !== null ? 'llm' : 'rules';
  const agents = [tabooHinter, tabooGuesser];
  // Only the engine this game runs on is loaded.
  const engine: Engine = options.redis
    ? await import('@queueflow/worker').then(
        ({ RedisEngine }) => new RedisEngine({ connection: options.redis!, flows: [], agents, prefix: options.prefix }),
      )
    : await import('@queueflow/runtime').then(({ LocalEngine }) => new LocalEngine({ flows: [], agents }));
  const where = options.redis
    ? `on queueflow workers (${redactUrl(options.redis)}, prefix ${options.prefix})`
    : 'embedded (LocalEngine)';
  const cards = options.words?.length ?? TABOO_DECK.length;
  console.error(
    `Taboo: ${cards} card${cards === 1 ? '' : 's'}, ${options.turns} hints each, ` +
      `${players === 'llm' ? `model players (${llmConfigFromEnv()!.model})` : 'rule-based players'}, ${where}`,
  );
  if (players === 'llm' && options.redis)
    console.error('The workers call the model with the OPENAI_* variables of their own environment.');

  let hint: NodeJS.Timeout | undefined;
  const live = new LiveTranscript((text) => process.stderr.write(text));
  const interrupt = new AbortController();
  const onSigint = (): void => {
    if (process.stderr.isTTY) process.stderr.write('\n'); // past the terminal's ^C
    interrupt.abort(); // playTaboo deletes both agents (cancelling a running turn), then fails
  };
  process.once('SIGINT', onSigint);
  try {
    const game = await playTaboo({
      engine,
      ...(options.words ? { words: options.words } : {}),
      maxTurns: options.turns,
      players,
      ...(options.turnTimeout ? { turnTimeoutMs: options.turnTimeout } : {}),
      signal: interrupt.signal,
      // The conversation live, on stderr (the transcript follows on stdout at the end): the
      // streams of the agents' turns.
      onSay: (said, entry) => live.say(said, entry),
      onSayStopped: (error) =>
        console.error(`  (the live view stopped: ${error instanceof Error ? error.message : String(error)})`),
      onStart: (started) => {
        if (!options.redis) return;
        console.error(`Agents ${started.hinter} and ${started.guesser}; waiting for workers...`);
        hint = setTimeout(() => {
          // Not awaited: a hint on a timer, independent of the game's own wait.
          void engine.agent(started.hinter).then(
            (info) => {
              if (info?.turns !== 0) return;
              console.error(
                `No worker has taken a step after ${NO_WORKER_HINT_MS / 1000} s. Start two with\n` +
                  `  npx queueflow worker --flows packages/examples/dist/taboo/taboo-flows.js --redis ${redactUrl(options.redis!)} --prefix '${options.prefix}'\n` +
                  '(from the repository root, after npm run build); the game waits for them.',
              );
            },
            () => {},
          ); // a failed look says nothing: the game's own wait reports real trouble
        }, NO_WORKER_HINT_MS);
      },
    }).catch((error: unknown) => {
      if (!interrupt.signal.aborted) throw error;
      throw new CommandExit(`interrupted: ${error instanceof Error ? error.message : String(error)}`, 130);
    });
    live.flush();
    console.log(formatTranscript(game.transcript));
  } finally {
    clearTimeout(hint);
    process.off('SIGINT', onSigint);
    await engine.close();
  }
}

runCommand(main);
