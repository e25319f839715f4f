import type OpenAI from 'openai';
import { llmClient, type LlmConfig } from './llm-client.js';

/** What one chat completion asks for: the request body without the model and streaming flags. */
export type ChatRequest = Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'model' | 'stream'>;

/**
 * One chat completion from the configured model (the official `openai` client), its text with
 * whitespace runs collapsed. With `onToken`, the model streams (`stream: true`) and each piece
 * of text is handed to `onToken` as it comes: a node passes `(token) => this.emit({ token })`,
 * so whoever follows the run (`engine.stream`, `queueflow tail`) sees the answer being written.
 *
 * @throws Error when the model returns no text; whatever the client throws (the node retries).
 */
export async function chatCompletion(
  config: LlmConfig,
  request: ChatRequest,
  options: { signal?: AbortSignal | undefined; onToken?: ((token: string) => void) | undefined } = {},
): Promise<string> {
  const client = llmClient(config);
  const requestOptions = options.signal ? { signal: options.signal } : undefined;
  let text = '';
  if (options.onToken) {
    const stream = await client.chat.completions.create(
      { ...request, model: config.model, stream: true },
      requestOptions,
    );
    for await (const chunk of stream) {
      const token = chunk.choices[0]?.delta?.content;
      if (!token) continue;
      text += token;
      options.onToken(token);
    }
  } else {
    const response = await client.chat.completions.create({ ...request, model: config.model }, requestOptions);
    text = response.choices[0]?.message?.content ?? '';
  }
  const collapsed = text.replace(/\s+/g, ' ').trim();
  if (!collapsed) throw new Error(`the model ${config.model} returned nothing`);
  return collapsed;
}
