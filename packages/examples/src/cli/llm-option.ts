import type { Command } from 'commander';
import { quotaFromEnv } from '../llm/llm-limits.js';
import { MockModelServer } from '../llm/mock-model-server.js';
import { llmConfigFromEnv } from '../utils/llm-client.js';

/** What `--llm [mock]` set up: whether the run asks for model summaries, and the mock it started. */
export interface LlmSetup {
  enabled: boolean;
  mock?: MockModelServer | undefined;
}

/**
 * `--llm [mock]` of the document pipeline and the mail desk: checks its value, starts the mock
 * model server for `--llm mock` (embedded runs only), and says when the summaries stay
 * extractive or come from the workers' own environment. `what` names who summarises.
 */
export async function setUpLlm(
  program: Command,
  llm: boolean | string | undefined,
  distributed: boolean,
  what = 'the workers summarise',
): Promise<LlmSetup> {
  if (llm !== undefined && llm !== true && llm !== 'mock')
    program.error(`error: --llm: expected no value or 'mock', got '${llm}'`);
  if (llm === 'mock' && distributed)
    program.error(
      'error: --llm mock runs embedded: start the workers with OPENAI_BASE_URL of a mock (see bench/llm-quota.ts)',
    );
  const mock = llm === 'mock' ? await startMockModel() : undefined;
  if (llm && distributed) {
    console.error(`--llm: ${what}, with the OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL of their own environment`);
  } else if (llm && llmConfigFromEnv() === null) {
    console.error(
      '--llm: OPENAI_BASE_URL, OPENAI_API_KEY and OPENAI_MODEL are not all set; keeping extractive summaries',
    );
  }
  return { enabled: llm === true || llm === 'mock', mock };
}

/**
 * `--llm mock`: a mock model server on loopback with the quota of QF_LLM_QUOTA (the one the
 * model-calling nodes' limits respect), which this process's model calls go to.
 */
async function startMockModel(): Promise<MockModelServer> {
  const quota = quotaFromEnv();
  const mock = await MockModelServer.start({
    requests: quota.requests,
    perMs: quota.perMs,
    concurrent: quota.concurrent,
  });
  Object.assign(process.env, { OPENAI_BASE_URL: mock.baseURL, OPENAI_API_KEY: 'mock', OPENAI_MODEL: 'mock' });
  console.error(
    `--llm mock: mock model server at ${mock.baseURL}, ${quota.requests} requests per ${quota.perMs} ms, ${quota.concurrent} at once`,
  );
  return mock;
}

/** The report's lines on what the mock model server answered. */
export function mockLines(mock: MockModelServer): string[] {
  const stats = mock.stats();
  return [
    `Model calls      ${stats.ok} answered, ${stats.tooManyRequests} answered 429 (mock model server)`,
    `Model tokens     ${stats.promptTokens} prompt, ${stats.completionTokens} completion`,
  ];
}
