/**
 * The stream of a run whose worker is SIGKILLed mid-step: the entries the killed try wrote stay,
 * with attempt 0; the try that takes the step over (another worker, once the lock lapses) writes
 * one restart entry (issue 30, item 7: the attempt cut short, the worker that stopped, the one
 * that took over), then its own entries, with attempt 1; a follower that stayed on throughout gets
 * them all, in order, and so does `queueflow tail`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { StreamEntry } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { within } from '../support/wait-for.js';
import { startScript } from '../support/cli-process.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { talker } from './stream-flows.js';

const FLOWS = fileURLToPath(new URL('./stream-flows.ts', import.meta.url));
const CLI = fileURLToPath(new URL('../../packages/worker/dist/cli.js', import.meta.url));

describe('streams: SIGKILL the worker in the middle of a step', () => {
  const prefix = testPrefix('stream-kill');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-stream-kill-'));
  let workers: WorkerProcess[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [talker], prefix });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  it("keeps the killed try's entries and delivers the retried try's after them, with attempt numbers", async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, lockDurationMs: 2000, stalledIntervalMs: 1000 };
    workers = [await spawnWorker(options)];
    const handle = await engine.start(talker, {}, { params: { words: 6, gapMs: 150, markerDir } });
    const seen: StreamEntry[] = [];
    const following = (async () => {
      for await (const entry of engine.stream(handle.id)) {
        seen.push(entry);
        if (seen.length === 2) {
          // Two words out: kill the worker speaking, and let another one take the step over.
          const pid = Number(readFileSync(join(markerDir, 'speaking'), 'utf8'));
          const victim = workers.find((w) => w.pid === pid)!;
          victim.kill('SIGKILL');
          await victim.exited;
          workers.push(await spawnWorker(options));
        }
      }
    })();
    await within(following, 60_000, 'the stream did not end');
    expect((await handle.result()).status).toBe('completed');

    const killed = seen.filter((e) => e.attempt === 0);
    const [restart, ...retried] = seen.filter((e) => e.attempt === 1);
    expect(killed.length).toBeGreaterThanOrEqual(2);
    expect(killed.length).toBeLessThan(6);
    expect(killed.map((e) => e.data)).toEqual(Array.from({ length: killed.length }, (_, word) => ({ word })));
    // One entry says the step restarted: which try stopped on which worker, which worker took over.
    const [victim, survivor] = [workers[0]!, workers[1]!];
    expect(restart).toMatchObject({
      step: 0,
      attempt: 1,
      node: 'speak',
      data: null,
      restart: {
        attempt: 0,
        stoppedWorker: expect.stringMatching(new RegExp(`:${victim.pid}:`)),
        worker: expect.stringMatching(new RegExp(`:${survivor.pid}:`)),
      },
    });
    expect(retried.map((e) => e.data)).toEqual([...Array.from({ length: 6 }, (_, word) => ({ word })), 'done']);
    expect(retried.every((e) => e.restart === undefined)).toBe(true);
    expect(seen).toEqual([...killed, restart, ...retried]); // the retried try's entries follow the first try's
    expect(new Set(seen.map((e) => e.step))).toEqual(new Set([0]));
    // A late subscriber gets the same stream.
    const replay: StreamEntry[] = [];
    for await (const entry of engine.stream(handle.id)) replay.push(entry);
    expect(replay).toEqual(seen);
    // So does `queueflow tail`, which says so in one line.
    const tail = await startScript(CLI, ['tail', handle.id, '--redis', redisUrl(), '--prefix', prefix], {
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      timeoutMs: 30_000,
    }).exited;
    expect(tail.code, tail.stderr).toBe(0);
    const lines = tail.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(seen.length);
    expect(lines[killed.length]).toBe(
      `0.1 speak  -- restart: try 0.0 stopped with worker ${restart!.restart!.stoppedWorker}; worker ${restart!.restart!.worker} took over`,
    );
    expect(lines[killed.length + 1]).toBe('0.1 speak  {"word":0}');
  }, 90_000);

  it('writes the restart entry as the new try starts, even when that try writes nothing', async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, lockDurationMs: 2000, stalledIntervalMs: 1000 };
    const dir = mkdtempSync(join(markerDir, 'silent-'));
    await stopWorkers(workers);
    workers = [await spawnWorker(options)];
    const handle = await engine.start(
      talker,
      {},
      { params: { words: 6, gapMs: 150, markerDir: dir, silentRetry: true } },
    );
    const seen: StreamEntry[] = [];
    const following = (async () => {
      for await (const entry of engine.stream(handle.id)) {
        seen.push(entry);
        if (seen.length === 2) {
          const victim = workers[0]!;
          victim.kill('SIGKILL');
          await victim.exited;
          workers.push(await spawnWorker(options));
        }
      }
    })();
    await within(following, 60_000, 'the stream did not end');
    expect((await handle.result()).status).toBe('completed');

    const killed = seen.filter((e) => e.attempt === 0);
    expect(killed.length).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual([
      ...killed,
      expect.objectContaining({
        step: 0,
        attempt: 1,
        data: null,
        restart: {
          attempt: 0,
          stoppedWorker: expect.stringMatching(new RegExp(`:${workers[0]!.pid}:`)),
          worker: expect.stringMatching(new RegExp(`:${workers[1]!.pid}:`)),
        },
      }),
    ]);
  }, 90_000);
});
