import { llmClient, type LlmConfig } from './llm-client.js';

/**
 * The Taboo players' model calls, through the official `openai` client on any OpenAI-compatible
 * endpoint (`llmConfigFromEnv`: `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`). The agents
 * call these from their `exec`; the runtime knows nothing of models. Never used in tests.
 */

async function complete(
  config: LlmConfig,
  system: string,
  user: string,
  maxTokens: number,
  signal?: AbortSignal,
): Promise<string> {
  const response = await llmClient(config).chat.completions.create(
    {
      model: config.model,
      temperature: 0,
      max_tokens: maxTokens,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: user },
      ],
    },
    signal ? { signal } : undefined,
  );
  const text = response.choices[0]?.message?.content?.replace(/\s+/g, ' ').trim();
  if (!text) throw new Error(`the model ${config.model} returned nothing`);
  return text;
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
  return complete(config, system, user, 60, signal);
}

/** One guess (a single word, lower case) from a round's `hints`, not one of `wrongGuesses`. */
export async function llmGuess(
  config: LlmConfig,
  round: { hints: readonly string[]; wrongGuesses: readonly string[] },
  signal?: AbortSignal,
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
  const text = await complete(config, system, user, 10, signal);
  const guess = text.toLowerCase().match(/[a-z][a-z-]*/)?.[0];
  if (!guess) throw new Error(`the model ${config.model} gave no word: '${text}'`);
  return guess;
}
