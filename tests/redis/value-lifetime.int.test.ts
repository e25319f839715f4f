/**
 * How long Redis keeps a value stored apart (the claim check, issue 17 item 4): with no expiry
 * while any run that references it is kept without one (running, waiting, reopened), and a minute
 * past the expiry of the last run that references it once they have all ended, so it goes with
 * them and never outlives them (see claimValues/releaseValues in run-lifecycle.lua).
 */
import { describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { Tally, gate, type Gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';

type S = { token: string; blob: string; done?: boolean };

const RETENTION_MS = 120_000;
const entered = new Tally<number>();
const releases = new Map<string, Gate>();

/** Waits in exec until the test opens its token's gate. */
class Hold extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    entered.add(token, 1);
    await releases.get(token)!.promise;
  }
  override post(shared: S): void {
    shared.done = true;
  }
}
const hold = defineFlow('value-lifetime-hold', () => new Flow(new Hold({ name: 'hold' })));

const big = 'large '.repeat(2000);

async function valueKeys(redis: Redis | Cluster, prefix: string): Promise<{ value: string; refs: string }> {
  const keys = await redis.keys(`${prefix}:value:*`);
  const value = keys.filter((key) => /:value:[0-9a-f]{64}$/.test(key));
  expect(value).toHaveLength(1);
  return { value: value[0]!, refs: `${value[0]!}:refs` };
}

describe('values stored apart in Redis', () => {
  const setup = useRedisHarness();
  const options = { retentionMs: RETENTION_MS, largeValueBytes: 1024 };

  it('have no expiry while a run holding them is kept without one, and expire a minute after the last one', async () => {
    const h = await setup('value-lifetime', { flows: [hold], workerOptions: options, engineOptions: options });
    for (const token of ['t1', 't2']) releases.set(token, gate());
    const first = await h.engine.start<S>(hold, { token: 't1', blob: big });
    await waitFor('the first run to be in exec', () => entered.count('t1') === 1);
    const { value, refs } = await valueKeys(h.connection, h.prefix);
    expect(await h.connection.pttl(value)).toBe(-1);

    const second = await h.engine.start<S>(hold, { token: 't2', blob: big });
    await waitFor('the second run to be in exec', () => entered.count('t2') === 1);
    releases.get('t1')!.open();
    expect((await first.result()).status).toBe('completed');
    expect(await h.connection.pttl(value)).toBe(-1); // the second still runs
    expect(await h.connection.zrange(refs, 0, -1)).toEqual([first.id, second.id]);

    releases.get('t2')!.open();
    const result = await second.result();
    expect(result.shared).toEqual({ token: 't2', blob: big, done: true });
    for (const key of [value, refs]) {
      const ttl = await h.connection.pttl(key);
      expect(ttl).toBeGreaterThan(RETENTION_MS);
      expect(ttl).toBeLessThanOrEqual(RETENTION_MS + 60_000);
    }
    const claims = await h.connection.pttl(h.keys.runValues(second.id));
    expect(claims).toBeGreaterThan(0);
    expect(claims).toBeLessThanOrEqual(RETENTION_MS);
    expect(await h.connection.pttl(h.keys.run(second.id))).toBeLessThanOrEqual(RETENTION_MS);
  });

  it('have no expiry again once a run holding them is retried', async () => {
    const h = await setup('value-lifetime-retry', { flows: [hold], workerOptions: options, engineOptions: options });
    releases.set('t3', gate());
    const run = await h.engine.start<S>(hold, { token: 't3', blob: big });
    await waitFor('the run to be in exec', () => entered.count('t3') === 1);
    await h.engine.cancel(run.id);
    const { value } = await valueKeys(h.connection, h.prefix);
    expect(await h.connection.pttl(value)).toBeGreaterThan(RETENTION_MS);

    await h.engine.retry(run.id);
    expect(await h.connection.pttl(value)).toBe(-1);
    expect(await h.connection.pttl(h.keys.runValues(run.id))).toBe(-1);
    await waitFor('the retried step to be in exec', () => entered.count('t3') === 2);
    releases.get('t3')!.open();
    expect((await run.result()).status).toBe('completed');
    expect(await h.connection.pttl(value)).toBeGreaterThan(RETENTION_MS);
  });
});
