import type { LlmConfig } from './llm-client.js';
import { chatCompletion } from './llm-stream.js';

/**
 * The Taboo players' model calls, through the official `openai` client on any OpenAI-compatible
 * endpoint (`llmConfigFromEnv`: `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`). The agents
 * call these from their `exec`, passing `onToken` to stream the answer (`this.emit`); the runtime
 * knows nothing of models. Tests use a fake endpoint (test/taboo-llm.test.ts).
 */

/** Hands each piece of a model's answer to the caller as it comes (the node emits it). */
export type OnToken = (token: string) => void;

function complete(
  config: LlmConfig,
  system: string,
  user: string,
  maxTokens: number,
  signal?: AbortSignal,
  onToken?: OnToken,
): Promise<string> {
  return chatCompletion(
    config,
    {
      temperature: 0,
      max_tokens: maxTokens,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ],
    },
    { signal, onToken },
  );
}

/**
 * One clue for `word` that says neither it nor any of `forbidden`, new after `previousHints`
 * and the wrong guesses. The caller checks the rule: a model may break it.
 */
export function llmHint(
  config: LlmConfig,
  card: {
    word: string;
    forbidden: readonly string[];
    previousHints: readonly string[];
    wrongGuesses: readonly string[];
  },
  signal?: AbortSignal,
  onToken?: OnToken,
): Promise<string> {
  const system =
    'You are the hinter in the word game Taboo. Describe the secret word in one short sentence so that a player can ' +
    'guess it. Never say the secret word, any forbidden word, or any form of them (plurals, parts of compounds). ' +
    'Reply with the clue only.';
  const user = [
    `Secret word: ${card.word}`,
    `Forbidden words: ${card.forbidden.join(', ')}`,
    card.previousHints.length > 0 ? `Clues already given: ${card.previousHints.map((h) => `"${h}"`).join('; ')}` : '',
    card.wrongGuesses.length > 0 ? `Wrong guesses so far: ${card.wrongGuesses.join(', ')}` : '',
    card.previousHints.length > 0 ? 'Give a new clue, different from the ones already given.' : '',
  ]
    .filter(Boolean)
    .join('\n');
  return complete(config, system, user, 60, signal, onToken);
}

/** One guess (a single word, lower case) from a round's `hints`, not one of `wrongGuesses`. */
export async function llmGuess(
  config: LlmConfig,
  round: { hints: readonly string[]; wrongGuesses: readonly string[] },
  signal?: AbortSignal,
  onToken?: OnToken,
): Promise<string> {
  const system =
    'You are the guesser in the word game Taboo. From the clues, guess the secret word: a common English noun. ' +
    'Reply with that one word only.';
  const user = [
    `Clues: ${round.hints.map((h) => `"${h}"`).join('; ')}`,
    round.wrongGuesses.length > 0 ? `Already guessed, wrong: ${round.wrongGuesses.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('\n');
  const text = await complete(config, system, user, 10, signal, onToken);
  const guess = text.toLowerCase().match(/[a-z][a-z-]*/)?.[0];
  if (!guess) throw new Error(`the model ${config.model} gave no word: '${text}'`);
  return guess;
}
