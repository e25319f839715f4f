/**
 * Fault tests of agent messaging (README "Agents talking"), with real worker processes:
 * - Redis restarted (AOF) while reminders wait: each rings once, and an `every` reminder that
 *   missed ticks while Redis was down rings once for them, not once per tick;
 * - a 3-agent ask cycle whose agents' turns run on 3 workers fails at once with `ASK_CYCLE`, also
 *   when the turns handle unrelated messages (the cycle is found from the turns waiting);
 * - a worker SIGKILLed in a turn that published: every subscriber gets the body once, one id, and
 *   the conversation's record holds each message once;
 * - a runaway two-agent loop with a budget of 50 turns, on 3 workers: no turn past the 50th runs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { startRedisServer } from '../support/redis-server.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { alarm, announcer, listener, player, relay, scripted } from './agent-messaging-flows.js';

const FLOWS = fileURLToPath(new URL('./agent-messaging-flows.ts', import.meta.url));
const agents = [alarm, relay, scripted, announcer, listener, player];

describe('fault: agent messaging across processes', () => {
  let workers: WorkerProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await stopWorkers(workers);
    workers = [];
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('rings each reminder once across a Redis restart, and missed ticks once, not one by one', async () => {
    const server = await startRedisServer({ appendOnly: true });
    const prefix = testPrefix('reminders-restart');
    const engine = new RedisEngine({ connection: server.url, prefix, flows: [], agents });
    cleanups.push(async () => {
      await engine.close();
      await server.stop();
    });
    const options = { flows: FLOWS, redisUrl: server.url, prefix, concurrency: 4 };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    const keys = Array.from({ length: 20 }, (_, i) => `once${i}`);
    const at = Date.now() + 4000;
    for (const key of keys) await engine.send(alarm.ref(key), { at });
    await engine.send(alarm.ref('ticker'), { every: 400, missed: 'once' });
    await waitFor('the reminders set', async () => {
      const infos = await Promise.all([...keys, 'ticker'].map((key) => engine.agent(alarm.ref(key))));
      return infos.every((info) => info?.reminders.length === 1);
    });
    await waitFor(
      'two ticks',
      async () => ((await engine.agent(alarm.ref('ticker')))?.state.rings as unknown[]).length >= 2,
    );
    await server.kill();
    await new Promise((resolve) => setTimeout(resolve, 2500)); // ~6 ticks of the ticker missed
    await server.restart();
    const restartedAt = Date.now();
    // The client's first commands after the restart may meet a refused connection.
    await waitFor('the client to reach Redis again', () =>
      engine.agent(alarm.ref('ticker')).then(
        () => true,
        () => false,
      ),
    );
    await waitFor(
      'every one-shot reminder to ring',
      async () => {
        const infos = await Promise.all(keys.map((key) => engine.agent(alarm.ref(key))));
        return infos.every((info) => (info?.state.rings as unknown[] | undefined)?.length === 1 && !info!.running);
      },
      { timeoutMs: 60_000 },
    );
    for (const key of keys) expect((await engine.agent(alarm.ref(key)))!.reminders).toEqual([]);
    await waitFor('the ticker to tick after the restart', async () => {
      const rings = (await engine.agent(alarm.ref('ticker')))!.state.rings as { sentAt: number }[];
      return rings.filter((ring) => ring.sentAt >= restartedAt - 1000).length >= 2;
    });
    const rings = (await engine.agent(alarm.ref('ticker')))!.state.rings as { id: string; sentAt: number }[];
    expect(new Set(rings.map((ring) => ring.id)).size).toBe(rings.length);
    // The ~6 ticks missed while Redis was down came as one message, then the schedule went on: at
    // most that one and the next on-time tick within a period (replayed one by one, all 6 would).
    const after = rings
      .map((ring) => ring.sentAt)
      .filter((at) => at >= restartedAt - 1000)
      .sort((a, b) => a - b);
    expect(after.filter((at) => at - after[0]! < 350).length).toBeLessThanOrEqual(2);
  }, 120_000);

  describe('3 workers at concurrency 1: a waiting turn holds one', () => {
    const prefix = testPrefix('ask-cycle-3w');
    let engine: RedisEngine;
    let threeWorkers: WorkerProcess[] = [];
    beforeAll(async () => {
      engine = new RedisEngine({ connection: redisUrl(), prefix, flows: [], agents });
      const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 1 };
      threeWorkers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    }, 120_000);
    afterAll(async () => {
      await stopWorkers(threeWorkers);
      await engine.close();
      await deletePrefix(redisUrl(), prefix);
    });

    it('fails a 3-agent ask cycle at once, with its turns on 3 workers', async () => {
      const [a, b, c] = ['a', 'b', 'c'].map((key) => relay.ref(key)) as [string, string, string];
      const started = Date.now();
      const answer = await engine.ask(a, { path: [b, c, a] }, { timeoutMs: 60_000 });
      expect(answer?.body).toMatchObject({ code: 'ASK_CYCLE' });
      expect(Date.now() - started).toBeLessThan(60_000);
      // The three turns each held a slot of concurrency 1 while they waited: on three workers.
    }, 120_000);

    it('fails the ask closing a 3-agent cycle of unrelated turns at once, on 3 workers', async () => {
      const [a, b, c] = ['a', 'b', 'c'].map((key) => scripted.ref(key)) as [string, string, string];
      const started = Date.now();
      // Through the gates g0..g3: c's turn, then b's, are in flight before an ask needs them busy;
      // b's turn waits on c, c's on a, and a's turn asking b closes the cycle.
      const answers = await Promise.all([
        engine.ask(a, { ops: [{ send: 'g0' }, { receive: 'g1' }, { ask: b }] }, { timeoutMs: 60_000 }),
        engine.ask(b, { ops: [{ receive: 'g2' }, { send: 'g3' }, { ask: c }] }, { timeoutMs: 60_000 }),
        engine.ask(
          c,
          { ops: [{ receive: 'g0' }, { send: 'g2' }, { receive: 'g3' }, { send: 'g1' }, { ask: a }] },
          {
            timeoutMs: 60_000,
          },
        ),
      ]);
      expect(answers.map((answer) => answer?.body)).toEqual([
        {
          code: 'ASK_CYCLE',
          message: expect.stringContaining(`${b} → ${c} → ${a} → ${b}`) as unknown,
          pid: expect.any(Number) as unknown,
        },
        { reached: true, pid: expect.any(Number) as unknown },
        { reached: true, pid: expect.any(Number) as unknown },
      ]);
      expect(Date.now() - started).toBeLessThan(30_000);
    }, 120_000);
  });

  it('delivers a publish once to every subscriber, one id, when the publishing turn is SIGKILLed', async () => {
    const prefix = testPrefix('publish-sigkill');
    const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-publish-'));
    const engine = new RedisEngine({ connection: redisUrl(), prefix, flows: [], agents });
    cleanups.push(async () => {
      await engine.close();
      await deletePrefix(redisUrl(), prefix);
      rmSync(markerDir, { recursive: true, force: true });
    });
    const options = {
      flows: FLOWS,
      redisUrl: redisUrl(),
      prefix,
      concurrency: 2,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    const to = Array.from({ length: 50 }, (_, i) => `l${i}`);
    const conversation = await engine.send(
      announcer.ref('news'),
      { to, execMs: 4000, markerDir },
      { conversation: {} },
    );
    await waitFor('the turn to exec', () => {
      try {
        return readFileSync(join(markerDir, 'current'), 'utf8') !== '';
      } catch {
        return false;
      }
    });
    const pid = Number(readFileSync(join(markerDir, 'current'), 'utf8'));
    const victim = workers.find((worker) => worker.pid === pid)!;
    expect(victim, `the worker running the turn (pid ${pid})`).toBeDefined();
    victim.kill('SIGKILL');
    await victim.exited;
    workers.push(await spawnWorker(options));
    await waitFor('the turn to commit', async () => (await engine.agent(announcer.ref('news')))?.turns === 1, {
      timeoutMs: 60_000,
    });
    await waitFor('every listener', async () => {
      const infos = await Promise.all(to.map((key) => engine.agent(listener.ref(key))));
      return infos.every((info) => info?.turns === 1);
    });
    const ids = await Promise.all(
      to.map(async (key) => (await engine.agent(listener.ref(key)))!.state.got as string[]),
    );
    expect(ids.every((got) => got.length === 1)).toBe(true);
    expect(new Set(ids.map((got) => got[0])).size).toBe(1);
    // The conversation's record: the killed turn and each listener's, once each.
    const record = (await engine.conversation(conversation))!;
    const handled = record.messages.map((message) => `${message.id} -> ${message.to}`);
    expect(new Set(handled).size).toBe(handled.length);
    expect(record.messages).toHaveLength(1 + to.length);
    expect(record.turns).toBe(1 + to.length);
  }, 120_000);

  it('stops a runaway two-agent loop at 50 turns on 3 workers', async () => {
    const prefix = testPrefix('conversation-runaway');
    const engine = new RedisEngine({ connection: redisUrl(), prefix, flows: [], agents });
    cleanups.push(async () => {
      await engine.close();
      await deletePrefix(redisUrl(), prefix);
    });
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4 };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    const id = await engine.send(player.ref('ping'), { hit: 0 }, { conversation: { budget: { turns: 50 } } });
    await waitFor('the conversation to end', async () => (await engine.conversation(id))?.status === 'ended', {
      timeoutMs: 60_000,
    });
    const refs = [player.ref('ping'), player.ref('pong')];
    await waitFor('no turn to run', async () =>
      (await Promise.all(refs.map((ref) => engine.agent(ref)))).every((info) => info?.running === undefined),
    );
    const [ping, pong] = await Promise.all(refs.map((ref) => engine.agent(ref)));
    expect(ping!.turns + pong!.turns).toBe(50);
    expect((await engine.conversation(id))!).toMatchObject({ turns: 50, error: { code: 'CONVERSATION_BUDGET' } });
    expect([...ping!.failed, ...pong!.failed].map((letter) => letter.error.code)).toEqual(['CONVERSATION_BUDGET']);
  }, 120_000);
});
