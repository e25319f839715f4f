import { llmClient, type LlmConfig } from './llm-client.js';

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
  const response = await llmClient(config).chat.completions.create(
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
