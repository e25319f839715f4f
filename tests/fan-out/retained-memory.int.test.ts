/**
 * What an ended run keeps in Redis for its retention (issue 32, item 1). Every run and fan-out
 * child used to keep a stream key of about 4.7 KB for the 7 days, written only by its end
 * marker, and a run hash in Redis' hashtable encoding (once a value over 64 bytes had been in
 * it): 6.4 KB per no-op fan-out child, where the bar is 1.5 KB.
 *
 * - A run that emitted nothing and that no one followed keeps no stream key; its ended hash
 *   is in the small (listpack) encoding.
 * - A follower still ends with such a run: it marked the run `followed` as it came, and the
 *   run's end wrote the marker it wakes on.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject, type StreamEntry } from '@queueflow/runtime';
import { gate, type Gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';

/** Bytes of Redis (MEMORY USAGE of its keys) an ended no-op fan-out child may keep. */
const BAR_BYTES = 1536;
const CHILDREN = 200;

class NoOp extends Node {}
class Children extends ParallelBatchFlow<JsonObject> {
  override prep(): JsonObject[] {
    return Array.from({ length: CHILDREN }, (_, i) => ({ i }));
  }
}
const fanOut = defineFlow(
  'retained-fan-out',
  () => new Flow(new Children(new NoOp({ name: 'noop' }), { name: 'each' })),
);

const gates = new Map<string, Gate>();
/** Waits on its run's gate, emits nothing. */
class Gated extends Node<{ token: string }> {
  override async exec(): Promise<void> {
    await gates.get(this.params.token as string)!.promise;
  }
}
const gated = defineFlow('retained-gated', () => new Flow(new Gated({ name: 'gated' })));

describe('what an ended run keeps in Redis', () => {
  const setup = useRedisHarness();

  it(`keeps no stream and a small hash for a no-op fan-out child: at most ${BAR_BYTES} bytes each`, async () => {
    const { engine, connection, keys } = await setup('retained-children', { flows: [fanOut], concurrency: 20 });
    const result = await engine.run(fanOut, {});
    expect(result.status).toBe('completed');
    const childIds = Array.from({ length: CHILDREN }, (_, i) => `${result.id}.1.${i}`);
    let bytes = 0;
    for (const id of childIds) {
      const [runKey, ...others] = keys.runKeys(id);
      expect(await connection.exists(keys.stream(id)), `${id}'s stream`).toBe(0);
      expect(await connection.object('ENCODING', runKey), `${id}'s hash`).toBe('listpack');
      expect(await connection.ttl(runKey)).toBeGreaterThan(6 * 24 * 3600); // the default retention, 7 days
      for (const key of [runKey, ...others])
        bytes += Number((await connection.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
    }
    const perChild = bytes / CHILDREN;
    console.log(`an ended no-op fan-out child keeps ${Math.round(perChild)} bytes (MEMORY USAGE of its keys)`);
    expect(perChild).toBeLessThanOrEqual(BAR_BYTES);
    expect(await engine.get(childIds[0]!)).toMatchObject({ status: 'completed' }); // its record reads back whole
  });

  it('ends the stream of a followed run that emitted nothing on its end marker; an unfollowed one keeps no stream', async () => {
    const { engine, connection, keys } = await setup('retained-followed', { flows: [gated] });
    const token = `followed-${Date.now()}`;
    gates.set(token, gate());
    const [followed, alone] = await Promise.all([
      engine.start(gated, { token }, { params: { token } }),
      engine.start(gated, { token }, { params: { token } }),
    ]);
    const entries: StreamEntry[] = [];
    const following = (async () => {
      for await (const entry of engine.stream(followed.id)) entries.push(entry);
    })();
    await waitFor(
      'the follower to mark the run',
      async () => (await connection.hget(keys.run(followed.id), 'followed')) === '1',
    );
    gates.get(token)!.open();
    await following;
    expect(entries).toEqual([]);
    expect((await followed.result()).status).toBe('completed');
    expect((await alone.result()).status).toBe('completed');
    // The follower ended on the marker its run's end wrote; the other run has no stream at all.
    expect((await connection.xrange(keys.stream(followed.id), '-', '+')).map(([, fields]) => fields)).toEqual([
      ['end', 'completed'],
    ]);
    expect(await connection.exists(keys.stream(alone.id))).toBe(0);
    // A follower that comes after the end learns of it from the status, and writes nothing.
    const late: StreamEntry[] = [];
    for await (const entry of engine.stream(alone.id)) late.push(entry);
    expect(late).toEqual([]);
    expect(await connection.exists(keys.stream(alone.id))).toBe(0);
    expect(await connection.hexists(keys.run(alone.id), 'followed')).toBe(0);
    gates.delete(token);
  });
});
