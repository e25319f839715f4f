import { afterAll, describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Message } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

type S = { log: string[]; turns: number };
class Pinger extends Node<S> {
  override async prep(shared: S): Promise<Message | undefined> {
    if (shared.turns === 0) await this.send('pong', { n: 0 });
    return this.receive('ping', { timeoutMs: 5000 });
  }
  override async post(shared: S, message: Message | undefined): Promise<string | undefined> {
    if (!message) { shared.log.push('timeout'); return undefined; }
    const n = (message.body as { n: number }).n;
    shared.log.push(`ping ${n}`);
    shared.turns++;
    if (n >= 3) return undefined;
    await this.send('pong', { n });
    return 'again';
  }
}
class Ponger extends Node<S> {
  override prep(): Promise<Message | undefined> {
    return this.receive('pong', { timeoutMs: 5000 });
  }
  override async post(shared: S, message: Message | undefined): Promise<string | undefined> {
    if (!message) { shared.log.push('timeout'); return undefined; }
    const n = (message.body as { n: number }).n;
    shared.log.push(`pong ${n}`);
    await this.send('ping', { n: n + 1 });
    return n + 1 >= 3 ? undefined : 'again';
  }
}
const loop = (node: Node<S>) => { node.on('again', node); return new Flow(node); };
const ping = defineFlow('ping', () => loop(new Pinger({ name: 'pinger' })));
const pong = defineFlow('pong', () => loop(new Ponger({ name: 'ponger' })));
class Waiter extends Node<{ got?: unknown }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(`inbox-${this.params.i}`);
  }
  override post(shared: { got?: unknown }, message: Message | undefined): void {
    shared.got = message?.body ?? null;
  }
}
const waiter = defineFlow('waiter', () => new Flow(new Waiter({ name: 'waiter' })));

describe('RedisEngine mailboxes smoke', () => {
  const prefix = testPrefix('mbox');
  const engine = new RedisEngine({ connection: redisUrl(), flows: [ping, pong, waiter], prefix });
  const workers: { close(): Promise<void> }[] = [];
  afterAll(async () => {
    await engine.close();
    await Promise.all(workers.map((w) => w.close()));
    await deletePrefix(redisUrl(), prefix);
  });

  it('ping-pong between two runs', async () => {
    workers.push(await startWorker({ connection: redisUrl(), flows: [ping, pong, waiter], prefix, concurrency: 8 }));
    const [a, b] = await Promise.all([engine.run('ping', { log: [], turns: 0 }), engine.run('pong', { log: [], turns: 0 })]);
    expect(a.status, JSON.stringify(a.error)).toBe('completed');
    expect(a.shared.log).toEqual(['ping 1', 'ping 2', 'ping 3']);
    expect(b.shared.log).toEqual(['pong 0', 'pong 1', 'pong 2']);
  });

  it('parks 500 runs and wakes each with engine.send', async () => {
    const handles = await Promise.all(Array.from({ length: 500 }, (_, i) => engine.start('waiter', {} as { got?: unknown }, { params: { i } })));
    // wait until all are parked
    for (;;) {
      const infos = await Promise.all(handles.slice(-5).map((h) => engine.get(h.id)));
      if (infos.every((info) => info?.status === 'waiting')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await Promise.all(handles.map((_, i) => engine.send(`inbox-${i}`, { hello: i })));
    const results = await Promise.all(handles.map((h) => h.result()));
    results.forEach((r, i) => expect(r.shared.got).toEqual({ hello: i }));
  });
});
