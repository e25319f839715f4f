/**
 * The mock model server (tests, examples, benches): OpenAI-compatible answers through the official
 * `openai` client, streamed or not; 429 with Retry-After beyond its rate or its concurrency; token
 * counts. And the summarise node's reading of a 429 (`retryAfterMsOf`).
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { MockModelServer, type MockModelQuota } from '../src/llm/mock-model-server.js';
import { llmLimits, quotaFromEnv } from '../src/llm/llm-limits.js';
import { retryAfterMsOf } from '../src/llm/retry-after.js';

const servers: MockModelServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function start(quota: MockModelQuota): Promise<{ mock: MockModelServer; client: OpenAI }> {
  const mock = await MockModelServer.start(quota);
  servers.push(mock);
  return { mock, client: new OpenAI({ baseURL: mock.baseURL, apiKey: 'mock', maxRetries: 0 }) };
}

const ask = {
  model: 'mock',
  messages: [{ role: 'user' as const, content: 'Summarise the quarterly report about widgets please' }],
};

describe('MockModelServer', () => {
  it('answers chat completions, streamed or not, and counts tokens', async () => {
    const { mock, client } = await start({ latencyMs: 1 });
    const reply = await client.chat.completions.create(ask);
    expect(reply.choices[0]?.message.content).toMatch(/^Summary:/);
    let streamed = '';
    for await (const chunk of await client.chat.completions.create({ ...ask, stream: true }))
      streamed += chunk.choices[0]?.delta?.content ?? '';
    expect(streamed).toBe(reply.choices[0]?.message.content);
    const stats = mock.stats();
    expect(stats).toMatchObject({ ok: 2, tooManyRequests: 0 });
    expect(stats.promptTokens).toBeGreaterThan(0);
    expect(stats.completionTokens).toBeGreaterThan(0);
  });

  it('answers 429 with Retry-After beyond its rate', async () => {
    const { mock, client } = await start({ requests: 2, perMs: 60_000, latencyMs: 1 });
    await client.chat.completions.create(ask);
    await client.chat.completions.create(ask);
    const error = await client.chat.completions.create(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    const wait = retryAfterMsOf(error)!;
    expect(wait).toBeGreaterThan(50_000);
    expect(wait).toBeLessThanOrEqual(60_000);
    expect(mock.stats()).toMatchObject({ ok: 2, tooManyRequests: 1, overConcurrency: 0 });
  });

  it('answers 429 beyond its concurrency', async () => {
    const { mock, client } = await start({ concurrent: 1, latencyMs: 1000 });
    const results = await Promise.allSettled([
      client.chat.completions.create(ask),
      client.chat.completions.create(ask),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(mock.stats()).toMatchObject({ ok: 1, tooManyRequests: 1, overConcurrency: 1, maxConcurrent: 1 });
  });
});

describe('llm limits', () => {
  it('reads QF_LLM_QUOTA and leaves a margin on the window', () => {
    expect(quotaFromEnv({ QF_LLM_QUOTA: '30/10000/3' })).toEqual({ requests: 30, perMs: 10_000, concurrent: 3 });
    expect(quotaFromEnv({})).toEqual({ requests: 60, perMs: 60_000, concurrent: 2 });
    expect(() => quotaFromEnv({ QF_LLM_QUOTA: '30/10s' })).toThrow(/QF_LLM_QUOTA.*got '30\/10s'/);
    const [limit] = llmLimits({ requests: 60, perMs: 60_000, concurrent: 2 });
    expect(limit).toMatchObject({ key: 'llm', concurrency: 2, rate: { max: 60 } });
    expect(limit!.rate!.perMs).toBeGreaterThan(60_000);
  });

  it('reads a 429 without Retry-After as one second, and anything else as no 429', () => {
    expect(retryAfterMsOf({ status: 429, headers: {} })).toBe(1000);
    expect(retryAfterMsOf({ status: 429, headers: { 'retry-after': '2' } })).toBe(2000);
    expect(retryAfterMsOf({ status: 500, headers: {} })).toBeUndefined();
    expect(retryAfterMsOf(new Error('x'))).toBeUndefined();
  });
});
