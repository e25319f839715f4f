import OpenAI from 'openai';

/** Where the optional LLM summary comes from: an OpenAI-compatible endpoint. */
export interface LlmConfig {
  baseURL: string;
  apiKey: string;
  model: string;
}

/**
 * The endpoint from `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL`, or `null` unless all
 * three are set. Read in the process that runs the node (a worker reads its own environment).
 */
export function llmConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LlmConfig | null {
  const { OPENAI_BASE_URL: baseURL, OPENAI_API_KEY: apiKey, OPENAI_MODEL: model } = env;
  if (!baseURL || !apiKey || !model) return null;
  return { baseURL, apiKey, model };
}

let client: { key: string; openai: OpenAI } | undefined;

function clientFor(config: LlmConfig): OpenAI {
  const key = `${config.baseURL}\n${config.apiKey}`;
  if (client?.key !== key) {
    // Retries are the node's business (maxRetries / wait), not the client's.
    client = { key, openai: new OpenAI({ baseURL: config.baseURL, apiKey: config.apiKey, maxRetries: 0 }) };
  }
  return client.openai;
}

/** Characters of a document sent to the model. */
const PROMPT_CHARS = 6_000;

/**
 * A one- or two-sentence summary of a document from the configured model (the official `openai`
 * client). Throws what the client throws; the calling node retries and falls back.
 */
export async function llmSummary(
  config: LlmConfig,
  document: { subject: string | null; text: string },
  signal?: AbortSignal,
): Promise<string> {
  const response = await clientFor(config).chat.completions.create(
    {
      model: config.model,
      temperature: 0,
      max_tokens: 120,
      messages: [
        {
          role: 'system',
          content: 'Summarise the document in at most two plain sentences. Reply with the summary only.',
        },
        {
          role: 'user',
          content: `Subject: ${document.subject ?? '(none)'}\n\n${document.text.slice(0, PROMPT_CHARS)}`,
        },
      ],
    },
    signal ? { signal } : undefined,
  );
  const summary = response.choices[0]?.message?.content?.replace(/\s+/g, ' ').trim();
  if (!summary) throw new Error(`the model ${config.model} returned an empty summary`);
  return summary;
}
