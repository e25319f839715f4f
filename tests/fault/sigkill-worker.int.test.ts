import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { countdown, countdownShared, oneTo } from './fault-flows.js';

const FLOWS = fileURLToPath(new URL('./fault-flows.ts', import.meta.url));

describe('fault: SIGKILL a worker in the middle of a run', () => {
  const prefix = testPrefix('sigkill');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-sigkill-'));
  let workers: WorkerProcess[] = [];
  const engine = new RedisEngine({ connection: redisUrl(), flows: [countdown], prefix });

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  it('completes a 200-step run with every post committed exactly once', async () => {
    // A short lock so the killed worker's step is taken over within seconds (BullMQ stalled-job check).
    const options = {
      flows: FLOWS,
      redisUrl: redisUrl(),
      prefix,
      concurrency: 2,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    const handle = await engine.start(countdown, countdownShared(200), { params: { execMs: 15, markerDir } });

    await waitFor('the run to pass step 60', async () => ((await engine.get(handle.id))?.steps ?? 0) >= 60);
    const [pid] = readFileSync(join(markerDir, 'current'), 'utf8').split(' ').map(Number);
    const victim = workers.find((w) => w.pid === pid);
    expect(victim, `the worker running the step (pid ${pid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');

    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.count).toBe(200);
    expect(result.shared.seen).toEqual(oneTo(200));
    const info = await engine.get(handle.id);
    expect(info?.steps).toBe(200);
  }, 120_000);

  // The lock (2 s) expires long before the killed worker's heartbeat lapses (6 s): BullMQ's
  // stalled-job check gives its job back, and nothing but its beats said whose the job was.
  it("logs the stalled-job check's takeover of a killed worker's step once: from it, by the survivor", async () => {
    const alive = workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null);
    expect(alive).toHaveLength(2);
    const dir = mkdtempSync(join(markerDir, 'stalled-'));
    // Only the first run of the step waits (the survivor's runs at once).
    const params = { execMs: 60_000, waitOnce: true, markerDir: dir };
    const handle = await engine.start(countdown, countdownShared(1), { params });
    const current = join(dir, 'current');
    const pid = await waitFor('a worker to start the step', () =>
      existsSync(current) ? Number(readFileSync(current, 'utf8').split(' ')[0]) : undefined,
    );
    const victim = alive.find((worker) => worker.pid === pid)!;
    const survivor = alive.find((worker) => worker.pid !== pid)!;
    const registered = async (worker: WorkerProcess) => (await engine.workers()).find((w) => w.pid === worker.pid);
    // A beat after the one that counted the step names its job (told the heartbeat as it began).
    const counted = await waitFor('a beat of the victim with the step running', async () => {
      const entry = await registered(victim);
      return entry && entry.active > 0 ? entry : undefined;
    });
    await waitFor('its next beat', async () => ((await registered(victim))?.lastSeenAt ?? 0) > counted.lastSeenAt);
    const survivorId = (await registered(survivor))!.id;
    victim.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');

    const result = await handle.result({ timeoutMs: 30_000 });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.seen).toEqual([1]);
    const taken = (await engine.runEvents(handle.id)).filter((event) => event.kind === 'taken-over');
    expect(taken).toEqual([{ at: expect.any(Number), step: 0, kind: 'taken-over', from: counted.id, by: survivorId }]);
  }, 60_000);
});
