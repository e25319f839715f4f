import type { LlmConfig } from './llm-client.js';
import { chatCompletion } from './llm-stream.js';

/** Characters of a document sent to the model. */
const PROMPT_CHARS = 6_000;

/**
 * A one- or two-sentence summary of a document from the configured model (the official `openai`
 * client), streamed to `onToken` when given. Throws what the client throws; the calling node
 * retries and falls back.
 */
export async function llmSummary(
  config: LlmConfig,
  document: { subject: string | null; text: string },
  signal?: AbortSignal,
  onToken?: (token: string) => void,
): Promise<string> {
  return chatCompletion(
    config,
    {
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
    { signal, onToken },
  );
}
