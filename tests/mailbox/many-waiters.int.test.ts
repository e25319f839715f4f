/**
 * Many runs parked on one address (issue 16, item 7): every message sent there reaches a parked
 * run promptly, however many wait, and a send wakes about one run, not all of them.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Message } from '@queueflow/runtime';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor } from '../support/wait-for.js';

type S = { got?: unknown };
let preps = 0;

/** Takes one message from `params.address`, waiting as long as it takes. */
class TakesOne extends Node<S> {
  override prep(): Promise<Message | undefined> {
    preps++;
    return this.receive((this.params as { address: string }).address);
  }
  override post(shared: S, message: Message | undefined): void {
    shared.got = message?.body ?? null;
  }
}
const takesOne = defineFlow('takes-one', () => new Flow(new TakesOne({ name: 'takes' })));

describe('many runs parked on one address', () => {
  const setup = useRedisHarness();

  it('delivers each of 400 messages sent one by one to one of 400 parked runs', async () => {
    const redis = await setup('many-waiters', { flows: [takesOne], workers: 0 });
    await redis.worker({ concurrency: 8 });
    await redis.worker({ concurrency: 8 });
    const address = 'crowded';
    const runs = await Promise.all(
      Array.from({ length: 400 }, (_, i) => redis.engine.start(takesOne, {} as S, { params: { address, i } })),
    );
    await waitFor(
      'every run to park',
      async () => {
        const infos = await Promise.all(runs.map((run) => redis.engine.get(run.id)));
        return infos.every((info) => info?.status === 'waiting');
      },
      { timeoutMs: 60_000 },
    );
    preps = 0;
    const started = Date.now();
    for (let i = 0; i < 400; i++) await redis.engine.send(address, i);
    const results = await Promise.all(runs.map((run) => run.result({ timeoutMs: 60_000 })));
    const elapsedMs = Date.now() - started;
    console.log(
      `400 runs parked on one address got their message ${elapsedMs} ms after the first send; ${preps} prep runs`,
    );
    expect(results.every((result) => result.status === 'completed')).toBe(true);
    expect(new Set(results.map((result) => result.shared.got)).size).toBe(400);
    expect(await redis.connection.llen(redis.keys.mailbox(address))).toBe(0);
  }, 120_000);
});
