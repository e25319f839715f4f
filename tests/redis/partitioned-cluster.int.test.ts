/**
 * Issue 18, item 2, on the suite's 3-master Redis Cluster: a deployment of 16 partitions spreads
 * its runs' keys over every master, and its runs keep their guarantees (fan-out, cancel, fork,
 * idempotency, budgets, listing) with each transition one script in one partition. The count is
 * stored once: a client that says otherwise is refused, naming both.
 */
import { describe, expect, it } from 'vitest';
import { Flow, Node, ParallelBatchFlow, QueueflowError, defineFlow, type JsonObject } from '@queueflow/runtime';
import type { Cluster } from 'ioredis';
import { Partitions } from '@queueflow/worker';
import { gate, type Gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { masters } from '../support/redis-prefix.js';
import { waitFor } from '../support/wait-for.js';

const PARTITIONS = 16;

class Count extends Node<{ n: number }> {
  override post(shared: { n: number }): undefined {
    shared.n += 1;
  }
}
const counting = defineFlow('partitioned-count', () => {
  const [a, b] = [new Count({ name: 'a' }), new Count({ name: 'b' })];
  a.next(b);
  return new Flow(a);
});

class Double extends Node<JsonObject> {
  override post(shared: JsonObject): undefined {
    shared[`x${String(this.params.i)}`] = Number(this.params.i) * 2;
  }
}
class Items extends ParallelBatchFlow<JsonObject> {
  override prep(): JsonObject[] {
    return Array.from({ length: 40 }, (_, i) => ({ i }));
  }
}
const fanning = defineFlow('partitioned-fan-out', () => new Items(new Double({ name: 'double' }), { name: 'items' }));

/** Per run token: the gate its node waits on. */
const gates = new Map<string, Gate>();
class Held extends Node<{ token: string }> {
  override prep(shared: { token: string }): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    await gates.get(token)?.promise;
  }
}
const holding = defineFlow('partitioned-held', () => new Flow(new Held({ name: 'held' })));
const slotted = defineFlow(
  'partitioned-slotted',
  () => new Flow(new Held({ name: 'slotted', limits: [{ key: 'one-at-a-time', concurrency: 1 }] })),
);

class Talk extends Node {
  override async exec(): Promise<void> {
    await this.send('partitioned-inbox', { hello: true });
  }
}
const talking = defineFlow('partitioned-talk', () => new Flow(new Talk({ name: 'talk', maxRetries: 1 })));

const flows = [counting, fanning, holding, slotted, talking];

describe('a store of 16 partitions on a 3-master cluster', () => {
  const setup = useRedisHarness();
  const open = (name: string, workers = 1): ReturnType<typeof setup> =>
    setup(name, {
      flows,
      cluster: true,
      workers,
      engineOptions: { partitions: PARTITIONS },
      workerOptions: { partitions: PARTITIONS },
    });

  it("spreads 1,000 runs' keys over all three masters, none with more than half", async () => {
    const { engine, prefix, connection } = await open('partitioned-spread', 0);
    await Promise.all(Array.from({ length: 1000 }, () => engine.start(counting, { n: 0 })));
    const perMaster = await Promise.all(
      (await masters(connection as Cluster)).map(async (node) => {
        let [cursor, count] = ['0', 0];
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix.slice(0, -1)}*`, 'COUNT', 1000);
          [cursor, count] = [next, count + keys.filter((key) => key.includes(':run:')).length];
        } while (cursor !== '0');
        return count;
      }),
    );
    expect(perMaster).toHaveLength(3);
    const total = perMaster.reduce((sum, count) => sum + count, 0);
    expect(total).toBeGreaterThanOrEqual(1000);
    for (const count of perMaster) {
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThanOrEqual(total / 2);
    }
  });

  it('runs sequential runs and a fan-out whose children go round the partitions', async () => {
    const { engine } = await open('partitioned-runs');
    const results = await Promise.all(Array.from({ length: 20 }, () => engine.run(counting, { n: 0 })));
    for (const result of results) expect(result).toMatchObject({ status: 'completed', shared: { n: 2 } });
    const fanned = await engine.run(fanning, {});
    expect(fanned.status).toBe('completed');
    expect(fanned.shared).toMatchObject({ x0: 0, x39: 78 });
    const partitions = new Partitions('{x}', PARTITIONS);
    const children = await engine.children(fanned.id, { limit: 40 });
    expect(children).toHaveLength(40);
    const home = partitions.indexOf(fanned.id);
    for (const child of children) expect(partitions.indexOf(child.runId!)).toBe((home + child.index) % PARTITIONS);
    expect(new Set(children.map((child) => partitions.indexOf(child.runId!))).size).toBe(PARTITIONS);
    expect(children.every((child) => child.status === 'completed')).toBe(true);
  });

  it('runs the runs of a partition only on the workers that serve it', async () => {
    const redis = await open('partitioned-served', 0);
    const low = Array.from({ length: PARTITIONS / 2 }, (_, i) => i);
    const high = low.map((i) => i + PARTITIONS / 2);
    await redis.worker({ servePartitions: low });

    const partitions = new Partitions('{x}', PARTITIONS);
    const handles = await Promise.all(Array.from({ length: 24 }, () => redis.engine.start(counting, { n: 0 })));
    const [lows, highs] = [0, 1].map((half) =>
      handles.filter((handle) => Math.floor(partitions.indexOf(handle.id) / (PARTITIONS / 2)) === half),
    );
    expect(lows!.length * highs!.length, 'runs in both halves').toBeGreaterThan(0);
    for (const result of await Promise.all(lows!.map((handle) => handle.result())))
      expect(result).toMatchObject({ status: 'completed', shared: { n: 2 } });
    // Nobody serves the upper half yet: its runs have not started.
    for (const handle of highs!) expect((await redis.engine.get(handle.id))!.steps).toBe(0);

    await redis.worker({ servePartitions: high });
    for (const result of await Promise.all(highs!.map((handle) => handle.result())))
      expect(result).toMatchObject({ status: 'completed', shared: { n: 2 } });
  });

  it('lists runs of every partition, newest first', async () => {
    const { engine } = await open('partitioned-list', 0);
    const started: string[] = [];
    for (let i = 0; i < 30; i++) started.push((await engine.start(counting, { n: 0 })).id);
    const listed = await engine.list({ limit: 30 });
    // Runs of different partitions started in the same millisecond come in either order.
    expect(new Set(listed.map((run) => run.id))).toEqual(new Set(started));
    const times = listed.map((run) => run.createdAt);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const page = await engine.list({ limit: 10, offset: 10 });
    expect(page.map((run) => run.id)).toEqual(listed.slice(10, 20).map((run) => run.id));
    const partitions = new Partitions('{x}', PARTITIONS);
    expect(new Set(started.map((id) => partitions.indexOf(id))).size).toBeGreaterThan(3);
  });

  it('starts one run per idempotency key, whichever partition the key falls in', async () => {
    const { engine } = await open('partitioned-idempotency', 0);
    for (const key of ['order-1', 'order-2', 'order-3', 'order-4']) {
      const first = await engine.start(counting, { n: 0 }, { idempotencyKey: key });
      const again = await engine.start(counting, { n: 5 }, { idempotencyKey: key });
      expect(again.id).toBe(first.id);
    }
  });

  it('cancels, retries and forks runs', async () => {
    const { engine, until } = await open('partitioned-operate');
    gates.set('held', gate());
    const held = await engine.start(holding, { token: 'held' });
    await until(held.id, 'running', (info) => info.status === 'running');
    await engine.cancel(held.id);
    await until(held.id, 'cancelled', (info) => info.status === 'cancelled');
    gates.get('held')!.open();
    const done = await engine.run(counting, { n: 0 });
    const forked = await engine.fork(done.id, { step: 1 });
    expect(await forked.result()).toMatchObject({ status: 'completed', shared: { n: 2 } });
    gates.clear();
  });

  it('lets a budget of partition 0 admit runs of every partition', async () => {
    const { engine } = await open('partitioned-budget');
    for (const token of ['b0', 'b1', 'b2', 'b3', 'b4', 'b5']) gates.set(token, gate());
    const runs = await Promise.all(
      ['b0', 'b1', 'b2', 'b3', 'b4', 'b5'].map((token) => engine.start(slotted, { token })),
    );
    await waitFor('a run to hold the budget and the others to wait', async () => {
      const infos = await Promise.all(runs.map((run) => engine.get(run.id)));
      return infos.filter((info) => info?.status === 'throttled').length === 5;
    });
    for (const token of ['b0', 'b1', 'b2', 'b3', 'b4', 'b5']) gates.get(token)!.open();
    for (const run of runs) expect((await run.result()).status).toBe('completed');
    gates.clear();
  });

  it('refuses a client whose partition count differs from the stored one, naming both', async () => {
    const { client, engine } = await open('partitioned-mismatch', 0);
    await engine.start(counting, { n: 0 }); // a client's first run stores the count
    const other = client({ partitions: 4 });
    const error = await other.list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(QueueflowError);
    expect(error).toMatchObject({ code: 'INVALID_OPTION' });
    expect((error as Error).message).toMatch(/`partitions` is 4, but the deployment under prefix .* has 16/);
  });

  it('stores the count when a client connects first: a worker with another is refused, none lost', async () => {
    // A client that starts runs before any worker wrote them under its default count (16 on a
    // cluster); a worker then given another count must not take the deployment over.
    const redis = await setup('partitioned-client-first', { flows, cluster: true, workers: 0 });
    const handles = await Promise.all(Array.from({ length: 6 }, () => redis.engine.start(counting, { n: 0 })));
    const refused = await redis.worker({ partitions: 1 }).catch((caught: unknown) => caught);
    expect(refused).toMatchObject({ code: 'INVALID_OPTION' });
    expect((refused as Error).message).toMatch(/`partitions` is 1, but the deployment under prefix .* has 16/);
    await redis.worker(); // the stored count
    for (const handle of handles) expect((await handle.result()).status).toBe('completed');
  });

  it("refuses a client's first run when another count was stored after it connected", async () => {
    const redis = await setup('partitioned-stored-since', { flows, cluster: true, workers: 0 });
    await redis.engine.list(); // connected, and read no count: it takes 16, and stores nothing yet
    await redis.worker({ partitions: 4 });
    const error = await redis.engine.start(counting, { n: 0 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringMatching(/took 16 partitions under prefix .*, but 4 has been stored since/),
    });
    expect(await redis.client().list()).toEqual([]); // no run was written
  });

  it("delivers a run's message to a mailbox of another partition once, through a hand-off", async () => {
    const { engine, connection, prefix } = await open('partitioned-mailbox');
    const partitions = new Partitions(prefix, PARTITIONS);
    const inbox = partitions.indexOfAddress('partitioned-inbox');
    // Runs land in partitions by id: run until one ran outside the mailbox's partition.
    let runs = 0;
    for (let crossed = false; !crossed; runs++) {
      const result = await engine.run(talking, {});
      expect(result.status).toBe('completed');
      crossed = partitions.indexOf(result.id) !== inbox;
    }
    // One message per run, none twice, and no hand-off left pending in any partition.
    expect(await engine.mailboxes({ messages: 0 })).toMatchObject([{ address: 'partitioned-inbox', size: runs }]);
    const pending = await Promise.all(partitions.all.map((keys) => connection.exists(keys.handoffs())));
    expect(pending).toEqual(partitions.all.map(() => 0));
  });
});
