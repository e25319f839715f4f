/**
 * The Taboo players backed by a model, against a fake OpenAI-compatible endpoint on 127.0.0.1
 * (no network, no real model): the `openai` client's requests, a clue that breaks the taboo
 * failing its try, and the rule-based clue standing in after the last try.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { playTaboo, TABOO_DECK, type TabooSaid } from '../src/index.js';

interface ChatRequest {
  model: string;
  stream?: boolean;
  messages: { role: string; content: string }[];
}

describe('Taboo with model players (a fake OpenAI-compatible endpoint)', () => {
  const requests: ChatRequest[] = [];
  let server: Server;
  const saved = { ...process.env };

  /** The fake model: the hinter's clue depends on the secret word; the guesser reads the clue. */
  function reply(request: ChatRequest): string {
    const user = request.messages.find((m) => m.role === 'user')?.content ?? '';
    if (request.messages[0]?.content.includes('You are the hinter')) {
      if (user.includes('Secret word: piano')) return 'Chopin composed for it.';
      return 'A red fruit.'; // breaks the taboo of 'apple'
    }
    return user.includes('Chopin') ? 'Piano.' : 'banana';
  }

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const request = JSON.parse(body) as ChatRequest;
        requests.push(request);
        if (request.stream) {
          // Server-sent events, a chunk per word, as a streaming model answers.
          res.setHeader('content-type', 'text/event-stream');
          const words = reply(request).split(/(?<= )/);
          for (const word of words) {
            const chunk = {
              id: `chatcmpl-${requests.length}`,
              object: 'chat.completion.chunk',
              created: 0,
              model: request.model,
              choices: [{ index: 0, delta: { content: word }, finish_reason: null }],
            };
            res.write(`data: ${JSON.stringify(chunk)}\n\n`);
          }
          res.end('data: [DONE]\n\n');
          return;
        }
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            id: `chatcmpl-${requests.length}`,
            object: 'chat.completion',
            created: 0,
            model: request.model,
            choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: reply(request) } }],
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    process.env.OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
    process.env.OPENAI_API_KEY = 'test-key';
    process.env.OPENAI_MODEL = 'fake-model';
  });

  afterAll(async () => {
    for (const name of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await new Promise((resolve) => server.close(resolve));
  });

  it('plays a card with the model on both sides, its answers streamed token by token', async () => {
    requests.length = 0;
    const said: TabooSaid[] = [];
    const game = await playTaboo({ players: 'llm', words: ['piano'], onSay: (entry) => said.push(entry) });
    expect(game.transcript).toEqual([
      { kind: 'hint', round: 1, turn: 1, text: 'Chopin composed for it.', source: 'llm' },
      { kind: 'guess', round: 1, turn: 1, text: 'piano', correct: true },
      { kind: 'round', round: 1, word: 'piano', solved: true, turns: 1 },
      { kind: 'end', reason: 'played', solved: 1, rounds: 1 },
    ]);
    expect(game.guesserLog[0]?.source).toBe('llm');
    expect(requests.map((r) => r.model)).toEqual(['fake-model', 'fake-model']);
    expect(requests[0]!.messages[1]!.content).toContain('Forbidden words: keys, music, instrument, play, black');
    // The clue's tokens as the model streamed them, then the line the hinter said.
    const hinter = said.filter((s) => s.agent === 'hinter' && 'round' in s);
    expect(hinter.flatMap((s) => ('token' in s ? [s.token] : []))).toEqual(['Chopin ', 'composed ', 'for ', 'it.']);
    expect(hinter.at(-1)).toEqual({ agent: 'hinter', round: 1, turn: 1, text: 'Chopin composed for it.' });
    expect(
      said.filter((s) => s.agent === 'guesser').map((s) => ('token' in s ? s.token : 'text' in s ? s.text : '')),
    ).toEqual(['Piano.', 'piano']);
    expect(requests.every((r) => r.stream === true)).toBe(true);
  });

  it("rejects the model's clue when it says a forbidden word; the rule-based clue stands in after the last try", async () => {
    requests.length = 0;
    const game = await playTaboo({ players: 'llm', words: ['apple'], maxTurns: 1 });
    expect(game.transcript[0]).toEqual({
      kind: 'hint',
      round: 1,
      turn: 1,
      text: TABOO_DECK[0]!.clues[1],
      source: 'rules',
    });
    const hinterCalls = requests.filter((r) => r.messages[0]!.content.includes('You are the hinter'));
    expect(hinterCalls).toHaveLength(3); // the hinter's three tries
  });
});
