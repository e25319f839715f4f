/**
 * Contract: an ask that would close a wait cycle between agents' turns rejects at once with
 * `ASK_CYCLE`, naming the chain (README "Agents"). A's turn asks B and waits; B's turn, handling
 * that ask, asks A (directly, or through C): A's turn can never take it, so the ask fails now
 * instead of waiting out its timeout. Delegated handoffs count as asks; a transfer hands the
 * original askers' wait on.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, Node, type JsonObject } from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type Via = 'ask' | 'delegate' | 'transfer';

interface Hop extends JsonObject {
  /** The agents to reach in turn, the next one first, each with how. */
  path: { to: string; via: Via }[];
}

/** Reaches the next agent of the path and answers with what came back, or with the error of its ask. */
class Relay extends Node {
  override async prep(): Promise<void> {
    const message = this.message!;
    const [next, ...rest] = (message.body as Hop).path;
    let answer: unknown;
    if (next === undefined) answer = { reached: true };
    else if (next.via === 'transfer') {
      await this.handoff(next.to, { path: rest });
      return;
    } else {
      try {
        const reply =
          next.via === 'delegate'
            ? await this.handoff(next.to, { path: rest }, { mode: 'delegate', timeoutMs: 120_000 })
            : await this.ask(next.to, { path: rest }, { timeoutMs: 120_000 });
        answer = reply?.body ?? { timedOut: true };
      } catch (error) {
        const { code, message: text } = error as { code?: string; message: string };
        answer = { code, message: text };
      }
    }
    if (message.replyTo) await this.reply(message, answer as JsonObject);
  }
}
const path = (...hops: (string | [string, Via])[]): Hop => ({
  path: hops.map((hop) => (typeof hop === 'string' ? { to: hop, via: 'ask' } : { to: hop[0], via: hop[1] })),
});
const relay = defineAgent('relay', { state: () => ({}), turn: () => new Relay({ name: 'relay' }) });
const [a, b, c] = ['a', 'b', 'c'].map((key) => relay.ref(key)) as [string, string, string];

describe.each(engines)('%s: ask cycles', (name) => {
  const setup = useEngine(name);

  it('rejects the ask that closes a 3-agent cycle at once, naming the chain', async () => {
    const { engine } = await setup('ask-cycle-3', { flows: [], agents: [relay], autoAdvance: true });
    const answer = await engine.ask(a, path(b, c, a), { timeoutMs: 30_000 });
    expect(answer?.body).toEqual({
      code: 'ASK_CYCLE',
      message: expect.stringContaining(`${a} → ${b} → ${c} → ${a}`) as unknown,
    });
  });

  it('rejects a direct cycle and a self-ask; a chain without a cycle goes through', async () => {
    const { engine } = await setup('ask-cycle-2', { flows: [], agents: [relay], autoAdvance: true });
    expect((await engine.ask(a, path(b, a), { timeoutMs: 30_000 }))?.body).toMatchObject({ code: 'ASK_CYCLE' });
    expect((await engine.ask(c, path(c), { timeoutMs: 30_000 }))?.body).toMatchObject({ code: 'ASK_CYCLE' });
    expect((await engine.ask(a, path(b, c), { timeoutMs: 30_000 }))?.body).toEqual({ reached: true });
  });

  it('counts delegated handoffs in the chain, and a transfer hands the wait on', async () => {
    const { engine } = await setup('ask-cycle-handoff', { flows: [], agents: [relay], autoAdvance: true });
    expect((await engine.ask(a, path([b, 'delegate'], a), { timeoutMs: 30_000 }))?.body).toMatchObject({
      code: 'ASK_CYCLE',
    });
    // a asks b; b transfers to c and no longer waits: c asking b is no cycle, c asking a is one.
    expect((await engine.ask(a, path(b, [c, 'transfer'], b), { timeoutMs: 30_000 }))?.body).toEqual({ reached: true });
    expect((await engine.ask(a, path(b, [c, 'transfer'], a), { timeoutMs: 30_000 }))?.body).toMatchObject({
      code: 'ASK_CYCLE',
    });
  });
});
