/**
 * Fault tests of keyed agents (README "Agents"): racing first messages from several processes
 * activate the key once, and a worker SIGKILLed in the middle of a turn loses no message and
 * commits none twice. Workers and senders are real processes.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent, Node } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { tally } from './agent-flows.js';
import { compiledModule } from '../support/compiled-module.js';

const FLOWS = fileURLToPath(new URL('./agent-flows.ts', import.meta.url));
const SENDER = fileURLToPath(new URL('./send-agent-messages.ts', import.meta.url));

/** Turns of `slow` whose `exec` began in this process. */
let slowStarted = 0;
/** Takes 3 s in `exec`: long enough for its chain's lock to be lost meanwhile. */
class Slow extends Node<{ done: number }> {
  override async exec(): Promise<void> {
    slowStarted++;
    await new Promise((resolve) => setTimeout(resolve, 3000));
  }
  override post(state: { done: number }): undefined {
    state.done += 1;
    return undefined;
  }
}
const slow = defineAgent('fault-slow', { state: () => ({ done: 0 }), turn: () => new Slow({ name: 'slow' }) });
/** Sends to `slow` and ends: the chain of its task runs slow's turn next, taken (no task). */
class Starter extends Node {
  override async prep(): Promise<void> {
    await this.send(slow.ref('s'), {});
  }
}
const starter = defineAgent('fault-starter', { state: () => ({}), turn: () => new Starter({ name: 'starter' }) });

/** Runs a sender process to its end. */
function send(prefix: string, key: string, first: number, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [compiledModule(SENDER), redisUrl(), prefix, key, String(first), String(count)],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sender exited ${code}: ${errors}`))));
  });
}

describe('fault: keyed agents across processes', () => {
  let workers: WorkerProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await stopWorkers(workers);
    workers = [];
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it('activates a key once when 5 processes send its first messages at once, and handles each message once, FIFO per sender', async () => {
    const prefix = testPrefix('agents-race');
    const engine = new RedisEngine({ connection: redisUrl(), prefix, flows: [], agents: [tally] });
    cleanups.push(async () => {
      await engine.close();
      await deletePrefix(redisUrl(), prefix);
    });
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 8 };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    const ref = tally.ref('raced');
    await Promise.all([0, 1, 2, 3, 4].map((sender) => send(prefix, 'raced', sender * 100, 10)));
    await waitFor('50 turns', async () => (await engine.agent(ref))?.turns === 50, { timeoutMs: 60_000 });
    const info = (await engine.agent(ref))!;
    const seen = info.state.seen as number[];
    expect([...seen].sort((a, b) => a - b)).toEqual(
      [0, 1, 2, 3, 4].flatMap((s) => Array.from({ length: 10 }, (_, i) => s * 100 + i)),
    );
    for (const sender of [0, 1, 2, 3, 4]) {
      const own = seen.filter((n) => Math.floor(n / 100) === sender);
      expect(own, `sender ${sender}'s messages in the order sent`).toEqual([...own].sort((a, b) => a - b));
    }
    // One life of the key (one activation of a fresh key), 50 turns, each its own completed run.
    const history = await engine.agentHistory(ref);
    expect(history.map((turn) => turn.turn)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(new Set(history.map((turn) => turn.runId.replace(/t\d+$/, ''))).size).toBe(1);
    expect(history.every((turn) => turn.status === 'completed')).toBe(true);
  }, 120_000);

  it('loses no message and commits none twice when the worker of a turn is SIGKILLed mid-turn', async () => {
    const prefix = testPrefix('agents-sigkill');
    const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-agents-'));
    const engine = new RedisEngine({ connection: redisUrl(), prefix, flows: [], agents: [tally] });
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
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    const ref = tally.ref('killed');
    for (let n = 1; n <= 30; n++) await engine.send(ref, { n, execMs: 60, markerDir });
    await waitFor('turn 8', async () => ((await engine.agent(ref))?.turns ?? 0) >= 8, { timeoutMs: 60_000 });
    const [pid] = readFileSync(join(markerDir, 'current'), 'utf8').split(' ').map(Number);
    const victim = workers.find((worker) => worker.pid === pid);
    expect(victim, `the worker running the turn (pid ${pid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');
    await waitFor('30 turns', async () => (await engine.agent(ref))?.turns === 30, { timeoutMs: 90_000 });
    const info = (await engine.agent(ref))!;
    expect(info.state.seen).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(info).toMatchObject({ inbox: 0, failed: [] });
    expect(info.running).toBeUndefined();
  }, 150_000);

  it('ends a turn a chain took when the chain loses its lock during the turn', async () => {
    const prefix = testPrefix('agents-lost-lock');
    const redis = new Redis(redisUrl());
    const worker = await startWorker({
      connection: redisUrl(),
      prefix,
      flows: [],
      agents: [slow, starter],
      concurrency: 2,
      lockDurationMs: 1000,
      stalledIntervalMs: 500,
      onError: () => {},
    });
    const engine = new RedisEngine({ connection: redisUrl(), prefix, flows: [], agents: [slow, starter] });
    cleanups.push(async () => {
      await engine.close();
      await worker.close();
      await deletePrefix(redisUrl(), prefix);
      redis.disconnect();
    });
    slowStarted = 0;
    await engine.send(starter.ref('a'), {});
    await waitFor('the taken turn of slow to run', () => slowStarted > 0);
    // Another takes the lock of the task whose chain runs slow's turn (its stalled check, say):
    // the chain stops and drops the turn's try. The turn, which had no task, must get one.
    const locks = await redis.keys(`*${prefix.replace(/[{}]/g, '')}*:lock`);
    expect(locks.length).toBeGreaterThan(0);
    for (const key of locks) await redis.set(key, 'another-worker', 'PX', 60_000);
    await waitFor('the turn of slow to end', async () => (await engine.agent(slow.ref('s')))?.turns === 1, {
      timeoutMs: 30_000,
    });
    expect((await engine.agent(slow.ref('s')))?.state).toEqual({ done: 1 });
  }, 60_000);
});
