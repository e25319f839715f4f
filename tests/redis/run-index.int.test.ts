/**
 * The runs index does not outlive its runs (issue 16, item 3): ids of runs whose records expired
 * leave the index, and `list` gives `limit` live runs on its first call whatever the index held.
 * Workers trim it too, beside their heartbeat (issue 30, item 8), so that it does not grow in a
 * deployment where nobody calls `list`.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';

const quick = defineFlow('quick', () => new Flow(new Node({ name: 'only' })));

/** Waits for a message that never comes: the run stays live (parked). */
class WaitsForever extends Node {
  override prep(): Promise<unknown> {
    return this.receive('nobody-sends-here');
  }
}
const forever = defineFlow('forever', () => new Flow(new WaitsForever({ name: 'waits' })));

describe('the runs index', () => {
  const setup = useRedisHarness();

  it('drops the ids of expired runs; list gives live runs older than many expired ones', async () => {
    const redis = await setup('run-index', { flows: [quick, forever], workers: 0 });
    await redis.worker({ retentionMs: 1000, concurrency: 16 });
    const live = await Promise.all(Array.from({ length: 30 }, (_, i) => redis.engine.start(forever, { i })));
    for (const { id } of live) await redis.until(id, 'the run to park', (info) => info.status === 'waiting');
    const ended = await Promise.all(Array.from({ length: 400 }, (_, n) => redis.engine.run(quick, { n })));
    expect(ended.every((result) => result.status === 'completed')).toBe(true);
    await waitFor(
      'the finished runs to expire',
      async () => (await redis.connection.exists(...ended.map((r) => redis.keys.run(r.id)))) === 0,
      { timeoutMs: 30_000 },
    );

    const listed = await redis.engine.list({ limit: 20 });
    expect(listed.map((info) => info.status)).toEqual(Array.from({ length: 20 }, () => 'waiting'));
    expect(await redis.connection.zcard(redis.keys.runs())).toBe(30);
  });

  it("is trimmed by the workers' recovery sweep, with no list() called", async () => {
    const redis = await setup('run-index-sweep', { flows: [quick], workers: 0 });
    await redis.worker({ retentionMs: 1000 });
    const ended = await Promise.all(Array.from({ length: 50 }, (_, n) => redis.engine.run(quick, { n })));
    expect(ended.every((result) => result.status === 'completed')).toBe(true);
    await waitFor(
      'the finished runs to expire',
      async () => (await redis.connection.exists(...ended.map((r) => redis.keys.run(r.id)))) === 0,
      { timeoutMs: 30_000 },
    );
    // A worker trims once a minute: one started now does so at its first sweep, 2 s from now.
    await redis.worker();
    await waitFor(
      'the expired runs to leave the index',
      async () => (await redis.connection.zcard(redis.keys.runs())) === 0,
    );
    expect(await redis.connection.zcard(redis.keys.runsExpiries())).toBe(0);
  });
});
