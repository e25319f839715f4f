import OpenAI from 'openai';

/** Where the optional model calls go: an OpenAI-compatible endpoint. */
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

const clients = new Map<string, OpenAI>();

/**
 * The official `openai` client for the endpoint of `config`, one per endpoint and key in this
 * process. It does not retry: retries are the node's business (`maxRetries` / `wait`).
 */
export function llmClient(config: LlmConfig): OpenAI {
  const key = `${config.baseURL}\n${config.apiKey}`;
  let client = clients.get(key);
  if (!client) {
    client = new OpenAI({ baseURL: config.baseURL, apiKey: config.apiKey, maxRetries: 0 });
    clients.set(key, client);
  }
  return client;
}
