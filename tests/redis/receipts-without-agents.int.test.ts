/**
 * A plain run's receipt of a conversation's message is recorded by whichever worker runs its
 * step, also one that serves no agent types (README "Conversations"). A deployment may keep its
 * agents on some workers and its plain flows on others (node option `queue`); the conversation
 * must read the same either way.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, defineFlow, Flow, Node, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';

/** Asks the address in its message, and answers with what came back. */
class Forward extends Node {
  override async prep(): Promise<void> {
    const message = this.message!;
    const answer = await this.ask((message.body as { to: string }).to, { hello: true }, { timeoutMs: 30_000 });
    await this.reply(message, (answer?.body ?? null) as JsonObject);
  }
}
const forwarder = defineAgent('receipt-forwarder', { state: () => ({}), turn: () => new Forward({ name: 'forward' }) });

/** A plain run on queue `plain`: serves one ask on its mailbox. */
class Serve extends Node {
  override async prep(): Promise<void> {
    const asked = await this.receive((this.params as { address: string }).address);
    await this.reply(asked!, { served: true });
  }
}
const service = defineFlow('receipt-service', () => new Flow(new Serve({ name: 'serve', queue: 'plain' })));

describe('receipts on a worker that serves no agent types', () => {
  setWarningHandler(() => {});
  const setup = useRedisHarness();

  it("records the plain run's receipt and its answer in the conversation", async () => {
    const redis = await setup('receipts-no-agents', {
      flows: [service],
      workers: 0,
      engineOptions: { agents: [forwarder] },
    });
    await redis.worker({ flows: [], agents: [forwarder] }); // the default queue: turns
    await redis.worker({ flows: [service], queues: ['plain'] }); // no agent types
    const address = `service-${redis.prefix}`;
    const run = await redis.engine.start(service, {}, { params: { address } });
    const a = forwarder.ref('a');
    const answer = await redis.engine.ask(a, { to: address }, { timeoutMs: 30_000, conversation: { id: 'plain-1' } });
    expect(answer?.body).toEqual({ served: true });
    expect((await run.result()).status).toBe('completed');
    await waitFor('the turn to end', async () => !(await redis.engine.agent(a))?.running);
    const conversation = (await redis.engine.conversation('plain-1'))!;
    expect(conversation.participants).toEqual([a, run.id]);
    expect(conversation.messages.map((message) => [message.from ?? null, message.to])).toEqual([
      [null, a],
      [a, run.id], // the receipt of the run on the worker without agents
      [run.id, a],
    ]);
  });
});
