/**
 * A fan-out child that fails by stalling is an ordinary failure under its parent's policy
 * (issue 4, item 4; BULLMQ-NOTES "Delivery and stalls"). The child's `exec` never finishes, so
 * only killing its process ends a try. Workers run with `maxStalledCount: 1`: the first stall
 * is recovered (the child runs again on another worker), the second fails the child's job.
 *
 * Deterministic by construction: the test kills exactly the process that the hanging child
 * reports (its pid in `<probeKey>:hang`), twice, and a third worker stays alive to fail the job.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { FlowDefinition } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { stallCollectFlow, stallCollectItems, stallFailFast } from './fan-out-flows.js';
import type { StallWorkerOptions } from './stall-worker.js';
import { compiledModule } from '../support/compiled-module.js';

/** What the tests read of a run's `shared`. */
type Shared = Record<string, any>;

const FLOWS = fileURLToPath(new URL('./fan-out-flows.ts', import.meta.url));
const STALL_WORKER = fileURLToPath(new URL('./stall-worker.ts', import.meta.url));
const flows = [stallFailFast, stallCollectFlow, stallCollectItems];
const KEYS = ['a', 'b', 'hang', 'd'];
/** What the stalled job's failure says (BullMQ's deferred failure of a job that stalled too often). */
const STALLED = /stalled more than allowable limit/;

/** The BullMQ lock and stall settings of a test's workers. */
type Locks = Pick<StallWorkerOptions, 'lockDurationMs' | 'stalledIntervalMs' | 'maxStalledCount'>;
/** Locks that expire long before a dead worker's heartbeat lapses (6 s): BullMQ's stalled-job check finds the stalls. */
const SHORT_LOCKS: Locks = { lockDurationMs: 1000, stalledIntervalMs: 500, maxStalledCount: 1 };
/** Locks that outlast the test: only the takeover of a worker whose heartbeat lapsed finds the stalls. */
const LONG_LOCKS: Locks = { lockDurationMs: 120_000, stalledIntervalMs: 60_000, maxStalledCount: 1 };

/** Starts a stall worker process and resolves once it is ready. */
async function spawnStallWorker(options: StallWorkerOptions): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [compiledModule(STALL_WORKER), JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  });
  let output = '';
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(': ready')) resolve();
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // Not awaited: `exited` never rejects, and once ready this late reject() is a no-op.
    void exited.then((code) => reject(new Error(`stall worker exited (${code}) before it was ready:\n${output}`)));
  });
  return { child, pid: child.pid!, output: () => output, exited, kill: (signal) => child.kill(signal) };
}

describe('fan-out: a child that fails by stalling is an ordinary failure', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** Three stall workers, an engine and a probe connection on a prefix of this test's own. */
  async function cluster(
    name: string,
    locks: Locks,
  ): Promise<{ engine: RedisEngine; redis: Redis; workers: WorkerProcess[]; probeKey: string }> {
    const prefix = testPrefix(name);
    const options: StallWorkerOptions = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4, ...locks };
    const workers = await Promise.all([
      spawnStallWorker(options),
      spawnStallWorker(options),
      spawnStallWorker(options),
    ]);
    const engine = new RedisEngine({ connection: redisUrl(), flows, prefix });
    const redis = new Redis(redisUrl());
    cleanups.push(async () => {
      await engine.close();
      await stopWorkers(workers);
      redis.disconnect();
      await deletePrefix(redisUrl(), prefix);
    });
    return { engine, redis, workers, probeKey: `${prefix}:probe` };
  }

  /** Kills the process running the hanging child, waits for the child to run again elsewhere, kills that one too. */
  async function stallTwice(redis: Redis, probeKey: string, workers: WorkerProcess[]): Promise<number[]> {
    const killed: number[] = [];
    for (let stall = 1; stall <= 2; stall++) {
      const pids = await waitFor(
        `the hanging child's try ${stall}`,
        async () => {
          const list = (await redis.lrange(`${probeKey}:hang`, 0, -1)).map(Number);
          return list.length >= stall ? list : undefined;
        },
        { timeoutMs: 20_000 },
      );
      const victim = workers.find((w) => w.pid === pids[stall - 1]);
      expect(victim, `the worker running the hanging child (pid ${pids[stall - 1]})`).toBeDefined();
      victim!.kill('SIGKILL');
      expect(await victim!.exited).toBe('SIGKILL');
      killed.push(victim!.pid);
    }
    return killed;
  }

  async function runStalling(name: string, flow: FlowDefinition, locks: Locks = SHORT_LOCKS) {
    const { engine, redis, workers, probeKey } = await cluster(name, locks);
    const handle = await engine.start<Shared>(
      flow,
      { keys: KEYS },
      { params: { probeUrl: redisUrl(), probeKey, hangKey: 'hang' } },
    );
    // The other children end first, so that only the hanging one is in flight when workers die.
    await waitFor(
      'the other children to end',
      async () => (await engine.get(handle.id))?.children?.ended === KEYS.length - 1,
    );
    const killed = await stallTwice(redis, probeKey, workers);
    // Bounded, so that a wait that never ends says where the child's tries ran and what the
    // workers said (a CI run of a busy machine once timed out here with nothing to go on).
    const result = await handle.result({ timeoutMs: 60_000 }).catch(async (error: unknown) => {
      const tries = await redis.lrange(`${probeKey}:hang`, 0, -1);
      const said = workers.map((w) => `worker ${w.pid}:\n${w.output()}`).join('\n');
      throw new Error(`${String(error)}\nthe hanging child's tries ran on pids ${tries.join(', ')}\n${said}`);
    });
    // The first stall was recovered: the child ran again, on another process; the second failed it.
    expect(new Set(killed).size).toBe(2);
    expect(await redis.llen(`${probeKey}:hang`)).toBe(2);
    return { engine, result, workers };
  }

  it('fail-fast: the parent fails with CHILD_FAILED naming the stalled child', async () => {
    const { engine, result } = await runStalling('stall-fail-fast', stallFailFast);

    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('CHILD_FAILED');
    expect(result.error?.message).toMatch(/^child 2 of 'stall-keys' failed: /);
    expect(result.error?.message).toMatch(STALLED);
    expect(result.shared).toEqual({ keys: KEYS }); // nothing merged
    const info = await engine.get(result.id);
    expect(info?.status).toBe('failed');
  }, 120_000);

  it("collect (ParallelBatchFlow): post receives the stalled child as { ok: false, error } and the others' last actions", async () => {
    const { result } = await runStalling('stall-collect-flow', stallCollectFlow);

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.lastAction).toBe('fanned-in');
    expect(result.shared.outcomes).toEqual([
      { ok: true, value: 'ok-a' },
      { ok: true, value: 'ok-b' },
      { ok: false, error: { name: expect.any(String), message: expect.stringMatching(STALLED), code: 'INTERNAL' } },
      { ok: true, value: 'ok-d' },
    ]);
    expect(result.shared.done).toEqual({ a: true, b: true, d: true });
  }, 120_000);

  it("collect (ParallelBatchNode): post receives the stalled item as { ok: false, error } and the others' results", async () => {
    const { result } = await runStalling('stall-collect-items', stallCollectItems);

    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared.outcomes).toEqual([
      { ok: true, value: 'a' },
      { ok: true, value: 'b' },
      { ok: false, error: { name: expect.any(String), message: expect.stringMatching(STALLED), code: 'INTERNAL' } },
      { ok: true, value: 'd' },
    ]);
  }, 120_000);

  // A takeover hands the job back with the dead worker's lock token before the lock expires, so
  // BullMQ's check never counts that stall: the takeover counts it, or a step that kills every
  // worker that runs it would run for ever (and a worker only starved past its lapse, once).
  it('counts a stall found by a heartbeat takeover as BullMQ counts one its stalled-job check finds', async () => {
    const { result, workers } = await runStalling('stall-takeover', stallFailFast, LONG_LOCKS);

    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('CHILD_FAILED');
    expect(result.error?.message).toMatch(STALLED);
    const said = workers.map((w) => w.output()).join('\n');
    expect(said).toMatch(/stopped heartbeating .* took over 1 step\(s\): \S+ \(stalled 2 times: it fails\)/);
  }, 120_000);
});
