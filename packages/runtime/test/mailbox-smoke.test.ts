import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node, type Message } from '../src/index.js';

type S = { log: string[]; turns: number };

class Pinger extends Node<S> {
  override async prep(shared: S): Promise<Message | undefined> {
    if (shared.turns === 0) await this.send('pong', { n: 0 });
    return this.receive('ping', { timeoutMs: 2000 });
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
  override async exec(): Promise<void> {}
}
class Ponger extends Node<S> {
  override async prep(shared: S): Promise<Message | undefined> {
    return this.receive('pong', { timeoutMs: 2000 });
  }
  override async post(shared: S, message: Message | undefined): Promise<string | undefined> {
    if (!message) return undefined;
    const n = (message.body as { n: number }).n;
    shared.log.push(`pong ${n}`);
    await this.send('ping', { n: n + 1 });
    return n + 1 >= 3 ? undefined : 'again';
  }
}
const loop = (node: Node<S>) => { node.on('again', node); return new Flow(node); };
const ping = defineFlow('ping', () => loop(new Pinger({ name: 'pinger' })));
const pong = defineFlow('pong', () => loop(new Ponger({ name: 'ponger' })));

describe('mailboxes smoke', () => {
  it('ping-pong on flow.run', async () => {
    const a = { log: [], turns: 0 };
    const b = { log: [], turns: 0 };
    await Promise.all([ping.build().run(a), pong.build().run(b)]);
    expect(a.log).toEqual(['ping 1', 'ping 2', 'ping 3']);
    expect(b.log).toEqual(['pong 0', 'pong 1', 'pong 2']);
  });
  it('ping-pong on LocalEngine', async () => {
    const engine = new LocalEngine({ flows: [ping, pong] });
    const [a, b] = await Promise.all([engine.run('ping', { log: [], turns: 0 }), engine.run('pong', { log: [], turns: 0 })]);
    expect(a.status, JSON.stringify(a.error)).toBe('completed');
    expect(a.shared.log).toEqual(['ping 1', 'ping 2', 'ping 3']);
    expect(b.shared.log).toEqual(['pong 0', 'pong 1', 'pong 2']);
    await engine.close();
  });
});
