/**
 * RedisEngine's schedules are BullMQ job schedulers: one tick job per tick, one run per tick
 * however many workers serve the queue; each run's idempotency key names its tick
 * (`schedule.<name>.<due time>`), which the tests read to count ticks.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { Redis } from 'ioredis';
import { gate } from '../support/node-probes.js';
import { keysUnder } from '../support/redis-prefix.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';
import { ticked } from './schedule-flows.js';

const FLOWS = fileURLToPath(new URL('./schedule-flows.ts', import.meta.url));

/** The due times of the ticks that started runs of `schedule`, and the run each started. */
async function ticksOf(redis: Redis, prefix: string, schedule: string): Promise<Map<number, string>> {
  const marker = `${prefix}:idempotency:schedule.${schedule}.`;
  const keys = (await keysUnder(redis, marker)).sort();
  const ticks = new Map<number, string>();
  for (const key of keys) ticks.set(Number(key.slice(marker.length)), (await redis.get(key))!);
  return ticks;
}

describe('schedules on RedisEngine with 3 worker processes', () => {
  const prefix = testPrefix('schedules');
  const redis = new Redis(redisUrl());
  const engine = new RedisEngine({ connection: redisUrl(), flows: [ticked], prefix });
  let workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    redis.disconnect();
  });

  it('every: 1000 gives one run per tick, not one per worker', async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 2 };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options), spawnWorker(options)]);
    // 'allow': every tick starts a run, even on a machine so loaded that a run outlasts a tick.
    await engine.schedule('each-second', ticked, { every: 1000, overlap: 'allow' }, {});
    await waitFor('4 ticks', async () => (await ticksOf(redis, prefix, 'each-second')).size >= 4);
    expect(await engine.unschedule('each-second')).toBe(true);
    // A tick taken just before the schedule went may still start its run: let it settle.
    await waitFor('every run to end', async () => {
      const runs = await engine.list({ flow: 'ticked' });
      return runs.every((run) => run.status === 'completed') &&
        (await redis.llen(`${prefix}:steps:active`)) === 0 &&
        (await redis.zcard(`${prefix}:steps:delayed`)) === 0
        ? runs
        : undefined;
    });
    const ticks = await ticksOf(redis, prefix, 'each-second');
    const runs = await engine.list({ flow: 'ticked' });
    // One run per tick: as many runs as ticks, each tick its own run...
    expect(runs).toHaveLength(ticks.size);
    expect(new Set(ticks.values())).toEqual(new Set(runs.map((run) => run.id)));
    // ...and the ticks are BullMQ's slots, 1000 ms apart (a slot BullMQ found already past on a
    // loaded machine is skipped, never doubled).
    const due = [...ticks.keys()].sort((a, b) => a - b);
    for (let i = 1; i < due.length; i++) {
      const gap = due[i]! - due[i - 1]!;
      expect(gap >= 1000 && gap % 1000 === 0, `ticks ${due.join(', ')}`).toBe(true);
    }
    expect(ticks.size).toBeGreaterThanOrEqual(4);
    expect(await engine.schedules()).toEqual([]);
  }, 120_000);
});

type S = { token: string };
const gates = new Map<string, ReturnType<typeof gate>>();

class Held extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    await gates.get(token)?.promise;
  }
}
const held = defineFlow('held-schedule', () => new Flow(new Held({ name: 'held' })));

describe('schedules on RedisEngine: overlap and listing', () => {
  const setup = useRedisHarness();

  it("skips ticks while the schedule's last run has not ended", async () => {
    const h = await setup('schedule-skip', { flows: [held], workers: 3 });
    gates.set(h.prefix, gate());
    await h.engine.schedule('slow', held, { every: 1000 }, { token: h.prefix });
    const first = await waitFor('the first run', async () => (await h.engine.schedules())[0]?.lastRunId);
    await waitFor('two skipped ticks', async () => ((await h.engine.schedules())[0]?.skipped ?? 0) >= 2);
    expect(await h.engine.list({ flow: 'held-schedule' })).toHaveLength(1);
    gates.get(h.prefix)!.open();
    const ended = await h.engine.result(first);
    expect(ended.status).toBe('completed');
    const second = await waitFor('a run after the first ended', async () => {
      const last = (await h.engine.schedules())[0]?.lastRunId;
      return last !== first ? last : undefined;
    });
    await h.engine.unschedule('slow');
    const runs = await h.engine.list({ flow: 'held-schedule' });
    // Every run but the first started after the first had ended.
    const firstEnd = (await h.engine.get(first))!.finishedAt!;
    for (const run of runs.filter((r) => r.id !== first)) expect(run.createdAt).toBeGreaterThanOrEqual(firstEnd);
    expect(runs.map((run) => run.id)).toContain(second);
  }, 60_000);

  it('lists schedules with their definition and next tick, and removes them', async () => {
    const h = await setup('schedule-list', { flows: [held], workers: 0 });
    await h.engine.schedule(
      'nightly',
      held,
      { cron: '0 3 * * *', tz: 'Europe/Paris' },
      { token: 'n' },
      {
        params: { lang: 'fr' },
        priority: 2,
      },
    );
    await h.engine.schedule('poll', held, { every: 60_000, overlap: 'allow' }, { token: 'p' });
    const listed = await h.engine.schedules();
    expect(listed).toMatchObject([
      {
        name: 'nightly',
        flow: 'held-schedule',
        cron: '0 3 * * *',
        tz: 'Europe/Paris',
        overlap: 'skip',
        shared: { token: 'n' },
        params: { lang: 'fr' },
        priority: 2,
        skipped: 0,
      },
      { name: 'poll', every: 60_000, overlap: 'allow', shared: { token: 'p' }, params: {}, skipped: 0 },
    ]);
    // 03:00 in Paris is 02:00Z in winter, 01:00Z in summer: either way on the hour in UTC.
    expect(listed[0]!.next! % 3_600_000).toBe(0);
    expect(await h.engine.unschedule('nightly')).toBe(true);
    expect(await h.engine.unschedule('nightly')).toBe(false);
    expect((await h.engine.schedules()).map((s) => s.name)).toEqual(['poll']);
    await expect(h.engine.schedule('x', held, { every: -5 }, {})).rejects.toMatchObject({ code: 'INVALID_OPTION' });
  });
});
