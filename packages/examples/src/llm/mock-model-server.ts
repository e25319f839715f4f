import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Quotas of a {@link MockModelServer}, as a model provider enforces them. */
export interface MockModelQuota {
  /** Requests admitted per sliding window of `perMs` ms. @defaultValue 60 */
  requests?: number;
  /** The window, in ms. @defaultValue 60000 (one minute) */
  perMs?: number;
  /** Requests answered at once. @defaultValue 2 */
  concurrent?: number;
  /** How long each answer takes, in ms (spread over its streamed chunks). @defaultValue 50 */
  latencyMs?: number;
}

/** What a {@link MockModelServer} counted since it started (or since `reset`). */
export interface MockModelStats {
  /** Requests answered 200. */
  ok: number;
  /** Requests refused 429 (over the rate or the concurrency). */
  tooManyRequests: number;
  /** Of those, refused for concurrency. */
  overConcurrency: number;
  /** Most requests answered at once. */
  maxConcurrent: number;
  /** Tokens counted: prompt (about 4 characters each) and completion. */
  promptTokens: number;
  completionTokens: number;
  /** Epoch ms of each request answered 200, in order. */
  okAt: number[];
}

/**
 * A local OpenAI-compatible model server for tests, examples and benches (no network but
 * loopback, no model): `POST /v1/chat/completions` answers a short summary, streamed (SSE) or
 * not, and enforces a provider's quotas: at most `requests` per sliding `perMs` window and
 * `concurrent` at once, answering **429 with `Retry-After`** (whole seconds, and `retry-after-ms`)
 * beyond them, as OpenAI does. It counts tokens and 429s ({@link MockModelServer.stats}).
 *
 * @example
 * ```ts
 * const mock = await MockModelServer.start({ requests: 60, perMs: 60_000, concurrent: 2 });
 * process.env.OPENAI_BASE_URL = mock.baseURL; // http://127.0.0.1:<port>/v1
 * // ... run the pipeline with --llm ...
 * console.log(mock.stats().tooManyRequests);
 * await mock.close();
 * ```
 */
export class MockModelServer {
  private readonly quota: Required<MockModelQuota>;
  private active = 0;
  private counted: MockModelStats = emptyStats();

  private constructor(
    private readonly server: Server,
    quota: MockModelQuota,
  ) {
    this.quota = { requests: 60, perMs: 60_000, concurrent: 2, latencyMs: 50, ...quota };
  }

  /** Starts a server on 127.0.0.1 (`port` 0: any free port). */
  static async start(quota: MockModelQuota = {}, port = 0): Promise<MockModelServer> {
    const server = createServer();
    const mock = new MockModelServer(server, quota);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => void mock.handle(request, response));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return mock;
  }

  /** The OpenAI base URL of this server (`http://127.0.0.1:<port>/v1`). */
  get baseURL(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  /** What it counted so far. */
  stats(): MockModelStats {
    return { ...this.counted, okAt: [...this.counted.okAt] };
  }

  /** Forgets what it counted (and the window). */
  reset(): void {
    this.counted = emptyStats();
  }

  /** Stops accepting requests and closes open connections. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    let raw = '';
    for await (const chunk of request) raw += String(chunk);
    const now = Date.now();
    const { okAt } = this.counted;
    const inWindow = okAt.filter((at) => at > now - this.quota.perMs);
    if (this.active >= this.quota.concurrent) {
      this.counted.overConcurrency++;
      return this.refuse(response, 1000);
    }
    if (inWindow.length >= this.quota.requests) {
      const oldest = inWindow[inWindow.length - this.quota.requests]!;
      return this.refuse(response, oldest + this.quota.perMs - now);
    }
    this.active++;
    this.counted.maxConcurrent = Math.max(this.counted.maxConcurrent, this.active);
    okAt.push(now);
    this.counted.ok++;
    try {
      await this.answer(raw, response);
    } finally {
      this.active--;
    }
  }

  private refuse(response: ServerResponse, retryAfterMs: number): void {
    this.counted.tooManyRequests++;
    const ms = Math.max(1, Math.ceil(retryAfterMs));
    response
      .writeHead(429, {
        'content-type': 'application/json',
        'retry-after': String(Math.ceil(ms / 1000)),
        'retry-after-ms': String(ms),
      })
      .end(JSON.stringify({ error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } }));
  }

  private async answer(raw: string, response: ServerResponse): Promise<void> {
    let body: { model?: string; stream?: boolean; messages?: { content?: unknown }[] } = {};
    try {
      body = JSON.parse(raw) as typeof body;
    } catch {
      response.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad JSON"}}');
      return;
    }
    const prompt = (body.messages ?? []).map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
    const words = summaryOf(prompt);
    const promptTokens = Math.ceil(prompt.length / 4);
    this.counted.promptTokens += promptTokens;
    this.counted.completionTokens += words.length;
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: words.length,
      total_tokens: promptTokens + words.length,
    };
    const id = `chatcmpl-mock-${this.counted.ok}`;
    const model = body.model ?? 'mock';
    if (!body.stream) {
      await delay(this.quota.latencyMs);
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: words.join(' ') }, finish_reason: 'stop' }],
          usage,
        }),
      );
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const each = this.quota.latencyMs / words.length;
    for (const [i, word] of words.entries()) {
      await delay(each);
      const chunk = {
        id,
        object: 'chat.completion.chunk',
        model,
        choices: [{ index: 0, delta: { content: i === 0 ? word : ` ${word}` } }],
      };
      response.write(`data: ${JSON.stringify(chunk)}\n\n`);
    }
    response.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage })}\n\n`,
    );
    response.end('data: [DONE]\n\n');
  }
}

function emptyStats(): MockModelStats {
  return {
    ok: 0,
    tooManyRequests: 0,
    overConcurrency: 0,
    maxConcurrent: 0,
    promptTokens: 0,
    completionTokens: 0,
    okAt: [],
  };
}

/** A deterministic "summary": the first words of the prompt's last line of text. */
function summaryOf(prompt: string): string[] {
  const words = prompt.split(/\s+/).filter((w) => /^[A-Za-z]{3,}$/.test(w));
  const picked = words.slice(-12, -2);
  return picked.length > 0 ? ['Summary:', ...picked] : ['Summary:', 'nothing', 'to', 'say'];
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
