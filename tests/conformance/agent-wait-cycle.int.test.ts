/**
 * Contract: an ask that would close a wait cycle rejects at once with `ASK_CYCLE`, naming the
 * chain, also when the turns in the cycle handle unrelated messages (README "Agents"): A's turn
 * asks B while B's turn, directly or through C, waits on A's answer. The turns already waiting are
 * edges the store keeps while they are parked (no message carries the chain), and the ask that
 * closes the cycle is the one rejected (on the cluster, the newest of a cycle across partitions,
 * within a heartbeat); the others get their answers once it has.
 *
 * Delegated handoffs count as asks. Each turn runs a script of steps through gates (plain mailboxes), so that every turn is in
 * flight before the ask that needs it busy arrives, whatever the order of the workers.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, Node, type JsonObject } from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type Op = { send: string } | { receive: string } | { ask: string } | { delegate: string };

/** Runs the message's ops in order and answers with what the last ask got, or with its error. */
class Scripted extends Node {
  override async prep(): Promise<void> {
    const message = this.message!;
    const ops = ((message.body as { ops?: Op[] }).ops ?? []) as Op[];
    let answer: JsonObject = { reached: true };
    for (const op of ops) {
      if ('send' in op) await this.send(op.send, {});
      else if ('receive' in op) await this.receive(op.receive, { timeoutMs: 120_000 });
      else {
        try {
          const reply =
            'ask' in op
              ? await this.ask(op.ask, {}, { timeoutMs: 120_000 })
              : await this.handoff(op.delegate, {}, { mode: 'delegate', timeoutMs: 120_000 });
          answer = (reply?.body as JsonObject | undefined) ?? { timedOut: true };
        } catch (error) {
          const { code, message: text } = error as { code?: string; message: string };
          answer = { code: code ?? 'none', message: text };
        }
      }
    }
    if (message.replyTo) await this.reply(message, answer);
  }
}
const scripted = defineAgent('scripted', { state: () => ({}), turn: () => new Scripted({ name: 'scripted' }) });
const [a, b, c] = ['a', 'b', 'c'].map((key) => scripted.ref(key)) as [string, string, string];

// RedisCluster: the turns of a cycle may park in different partitions; a worker's sweep finds it.
describe.each(engines)('%s: wait cycles of unrelated turns', (name) => {
  const setup = useEngine(name);

  // A delegated handoff parks its turn until the target replies, as an ask does: it counts alike.
  it.each(['ask', 'delegate'] as const)(
    'rejects the %s that closes a 2-agent cycle, naming the chain; the other is answered',
    async (op) => {
      const { engine } = await setup(`wait-cycle-2-${op}`, { flows: [], agents: [scripted] });
      const [fromA, fromB] = await Promise.all([
        engine.ask(a, { ops: [{ send: 'g0' }, { receive: 'g1' }, { [op]: b }] }, { timeoutMs: 30_000 }),
        engine.ask(b, { ops: [{ receive: 'g0' }, { send: 'g1' }, { [op]: a }] }, { timeoutMs: 30_000 }),
      ]);
      expect(fromA?.body).toEqual({
        code: 'ASK_CYCLE',
        message: expect.stringContaining(
          `'${a}' asking '${b}' would close a wait cycle: ${b} → ${a} → ${b}`,
        ) as unknown,
      });
      expect(fromB?.body).toEqual({ reached: true });
    },
  );

  it('rejects the ask that closes a 3-agent cycle, naming the chain', async () => {
    const { engine } = await setup('wait-cycle-3', { flows: [], agents: [scripted] });
    const [fromA, fromB, fromC] = await Promise.all([
      engine.ask(a, { ops: [{ send: 'g0' }, { receive: 'g1' }, { ask: b }] }, { timeoutMs: 30_000 }),
      engine.ask(b, { ops: [{ receive: 'g2' }, { send: 'g3' }, { ask: c }] }, { timeoutMs: 30_000 }),
      engine.ask(
        c,
        { ops: [{ receive: 'g0' }, { send: 'g2' }, { receive: 'g3' }, { send: 'g1' }, { ask: a }] },
        {
          timeoutMs: 30_000,
        },
      ),
    ]);
    expect(fromA?.body).toEqual({
      code: 'ASK_CYCLE',
      message: expect.stringContaining(`${b} → ${c} → ${a} → ${b}`) as unknown,
    });
    expect(fromB?.body).toEqual({ reached: true });
    expect(fromC?.body).toEqual({ reached: true });
  });

  it('lets a chain without a cycle through, and forgets the edges of answered asks', async () => {
    const { engine } = await setup('wait-cycle-none', { flows: [], agents: [scripted] });
    // a's turn asks b while b's turn waits on c: a chain a → b → c, no cycle.
    const chain = await Promise.all([
      engine.ask(a, { ops: [{ send: 'g0' }, { receive: 'g1' }, { ask: b }] }, { timeoutMs: 30_000 }),
      engine.ask(b, { ops: [{ receive: 'g0' }, { send: 'g1' }, { ask: c }] }, { timeoutMs: 30_000 }),
    ]);
    expect(chain.map((reply) => reply?.body)).toEqual([{ reached: true }, { reached: true }]);
    // Each of them waited on the other's agent once: the reverse asks, from unrelated turns, go through.
    const reverse = await Promise.all([
      engine.ask(c, { ops: [{ send: 'g2' }, { receive: 'g3' }, { ask: b }] }, { timeoutMs: 30_000 }),
      engine.ask(b, { ops: [{ receive: 'g2' }, { send: 'g3' }, { ask: a }] }, { timeoutMs: 30_000 }),
    ]);
    expect(reverse.map((reply) => reply?.body)).toEqual([{ reached: true }, { reached: true }]);
  });
});
