/**
 * The stream of a run whose worker is SIGKILLed mid-step: the entries the killed try wrote stay,
 * with attempt 0; the try that takes the step over (another worker, once the lock lapses) writes
 * its own after them, with attempt 1; a follower that stayed on throughout gets both, in order.
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
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { talker } from './stream-flows.js';

const FLOWS = fileURLToPath(new URL('./stream-flows.ts', import.meta.url));

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
    const retried = seen.filter((e) => e.attempt === 1);
    expect(killed.length).toBeGreaterThanOrEqual(2);
    expect(killed.length).toBeLessThan(6);
    expect(killed.map((e) => e.data)).toEqual(Array.from({ length: killed.length }, (_, word) => ({ word })));
    expect(retried.map((e) => e.data)).toEqual([...Array.from({ length: 6 }, (_, word) => ({ word })), 'done']);
    expect(seen).toEqual([...killed, ...retried]); // the retried try's entries follow the first try's
    expect(new Set(seen.map((e) => e.step))).toEqual(new Set([0]));
    // A late subscriber gets the same stream.
    const replay: StreamEntry[] = [];
    for await (const entry of engine.stream(handle.id)) replay.push(entry);
    expect(replay).toEqual(seen);
  }, 90_000);
});
