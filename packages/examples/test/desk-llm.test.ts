/**
 * The mail desk with `--llm`: a thread of two mails or more gets its summary from the model (the
 * mock model server, in this process, through the official `openai` client) under the `llm`
 * budget's limits; a thread of one mail keeps its sentence; everything else is as without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEngine } from '@queueflow/runtime';
import {
  deskAgents,
  deskSample,
  readCorpusMails,
  runDesk,
  scriptedReviewer,
  type DeskMail,
  type DeskResult,
} from '../src/index.js';
import { MockModelServer } from '../src/llm/mock-model-server.js';

const MAILS = 30;
const ENV = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_MODEL', 'QF_LLM_QUOTA'] as const;

async function desk(mails: readonly DeskMail[], llmSummary: boolean): Promise<DeskResult> {
  const engine = new LocalEngine({ flows: [scriptedReviewer], agents: deskAgents });
  try {
    return await runDesk(engine, mails, { inFlight: 16, turnBudget: 8, llmSummary });
  } finally {
    await engine.close();
  }
}

describe('the mail desk with --llm (mock model server)', () => {
  let mock: MockModelServer;
  let mails: DeskMail[];
  const saved = Object.fromEntries(ENV.map((name) => [name, process.env[name]]));

  beforeAll(async () => {
    mails = deskSample(await readCorpusMails(), MAILS);
    // A quota the run stays within (the engine's limits hold the turns to 2 at once).
    mock = await MockModelServer.start({ requests: 1000, perMs: 1000, concurrent: 2, latencyMs: 1 });
    Object.assign(process.env, {
      OPENAI_BASE_URL: mock.baseURL,
      OPENAI_API_KEY: 'mock',
      OPENAI_MODEL: 'mock',
      QF_LLM_QUOTA: '1000/1000/2',
    });
  });
  afterAll(async () => {
    for (const name of ENV)
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    await mock.close();
  });

  it("summarises threads of several mails with the model, within the provider's quota", async () => {
    const extractive = await desk(mails, false);
    expect(mock.stats().ok).toBe(0); // without llmSummary no turn calls the model
    const withModel = await desk(mails, true);
    const stats = mock.stats();
    expect(stats.ok).toBeGreaterThan(0);
    expect(stats.tooManyRequests).toBe(0);
    expect(stats.maxConcurrent).toBeLessThanOrEqual(2);
    const plain = new Map(extractive.threads.map(({ key, state }) => [key, state]));
    expect(withModel.threads.map(({ key }) => key)).toEqual(extractive.threads.map(({ key }) => key));
    let byModel = 0;
    for (const { key, state } of withModel.threads) {
      const { summary, summarySource, ...rest } = state;
      const { summary: sentences, ...plainRest } = plain.get(key)!;
      expect(rest).toEqual(plainRest);
      if (state.count === 1) expect([summarySource, summary]).toEqual(['extractive', sentences]);
      else if (summarySource === 'llm') {
        byModel += 1;
        expect(summary).toMatch(/^Summary:/);
      }
    }
    expect(byModel).toBeGreaterThan(0);
    expect(withModel.senders).toEqual(extractive.senders);
  }, 30_000);
});
