/**
 * `queueflow agents`, `agent <ref>`, `conversations`, `conversation <id>` and `conversation fork` as a
 * user runs them:
 * the built CLI in child processes, against agents a worker process ran.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { at, parsed, queueflow } from './cli-harness.js';
import { pinger } from './cli-agents.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { compiledModule } from '../support/compiled-module.js';

const AGENTS = compiledModule(fileURLToPath(new URL('./cli-agents.ts', import.meta.url)));

describe('queueflow agents, agent, conversations, conversation', () => {
  const prefix = testPrefix('cli-agents');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [], agents: [pinger], prefix });
  let worker: WorkerProcess | undefined;
  let conversation = '';

  beforeAll(async () => {
    worker = await spawnWorker({ flows: AGENTS, redisUrl: redisUrl(), prefix, concurrency: 2 });
    conversation = await engine.send(
      pinger.ref('ping'),
      { left: 3 },
      {
        conversation: { budget: { turns: 10, cost: { key: 'tokens', max: 1000 } } },
      },
    );
    await waitFor('four turns', async () => (await engine.conversation(conversation))?.turns === 4);
    await waitFor('the last turn to end', async () => (await engine.agent(pinger.ref('pong')))?.turns === 2);
  }, 120_000);

  afterAll(async () => {
    await engine.close();
    await stopWorkers(worker ? [worker] : []);
    await deletePrefix(redisUrl(), prefix);
  });

  it('agents lists the keys; agent prints one, or fails naming an unknown one', async () => {
    const [listed, shown, missing] = await Promise.all([
      queueflow(['agents', ...at(prefix)]),
      queueflow(['agent', pinger.ref('pong'), '--json', ...at(prefix)]),
      queueflow(['agent', pinger.ref('nobody'), ...at(prefix)]),
    ]);
    expect(listed).toEqual({
      code: 0,
      stdout: `${pinger.ref('ping')}\n${pinger.ref('pong')}\n`,
      stderr: '',
    });
    expect(parsed(shown)).toMatchObject({ type: 'cli-pinger', key: 'pong', turns: 2, state: { rounds: 2 } });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no agent '${pinger.ref('nobody')}'`);
  });

  it('conversations lists it; conversation prints its messages as a sequence, or JSON', async () => {
    const [listed, text, json, missing] = await Promise.all([
      queueflow(['conversations', ...at(prefix)]),
      queueflow(['conversation', conversation, ...at(prefix)]),
      queueflow(['conversation', conversation, '--json', ...at(prefix)]),
      queueflow(['conversation', 'nope', ...at(prefix)]),
    ]);
    expect(listed).toEqual({
      code: 0,
      stdout: `${conversation}\n`,
      stderr: '',
    });
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toBe(`conversation ${conversation}: running, 4 turns, budget: turns 10, cost 1000 tokens`);
    expect(lines[1]).toBe(`  participants: ${pinger.ref('ping')}, ${pinger.ref('pong')}`);
    expect(lines.slice(6)).toEqual([
      `  spent: ${pinger.ref('ping')} 10 tokens`,
      `  spent: ${pinger.ref('pong')} 10 tokens`,
    ]);
    expect(lines.slice(2, 6).map((line) => /-> (\S+)/.exec(line)?.[1])).toEqual([
      pinger.ref('ping'),
      pinger.ref('pong'),
      pinger.ref('ping'),
      pinger.ref('pong'),
    ]);
    expect(lines[2]).toContain(`(client) -> ${pinger.ref('ping')}  ${conversation}  turn 1`);
    expect(parsed(json)).toMatchObject({ id: conversation, turns: 4, status: 'running' });
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toContain("no conversation 'nope'");
  });

  it('conversation fork copies the agents at a message and replays from it', async () => {
    const messages = (await engine.conversation(conversation))!.messages;
    const [forked, bad] = await Promise.all([
      queueflow(['conversation', 'fork', conversation, '--at', messages[2]!.id, '--json', ...at(prefix)]),
      queueflow(['conversation', 'fork', conversation, '--at', 'nope', ...at(prefix)]),
    ]);
    const fork = parsed(forked) as { id: string; agents: Record<string, string> };
    expect(Object.keys(fork.agents).sort()).toEqual([pinger.ref('ping'), pinger.ref('pong')]);
    await waitFor('the two replayed turns', async () => (await engine.conversation(fork.id))?.turns === 2);
    await waitFor(
      'the copies to be idle',
      async () => !(await engine.agent(fork.agents[pinger.ref('pong')]!))?.running,
    );
    // Restored at the third message (ping's 2nd turn), both copies end where the originals did.
    expect((await engine.agent(fork.agents[pinger.ref('ping')]!))!.state).toEqual({ rounds: 2 });
    expect((await engine.agent(fork.agents[pinger.ref('pong')]!))!.state).toEqual({ rounds: 2 });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("no message 'nope'");
  });
});
