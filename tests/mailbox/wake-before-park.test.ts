/**
 * A wake whose deadline has passed by the time it is added is due at once, and may run before the
 * park it ends has committed: it must wait for that park, not be dropped (which left the run
 * parked with no wake at all: on LocalEngine, for ever).
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node, type Message } from '@queueflow/runtime';
import { FakeClock } from '../conformance/fake-clock.js';

type S = { got?: unknown };
let clock = new FakeClock();

/** Waits 1 ms for a message; the step then takes 5 ms more (the fake clock moves on). */
class WaitsBriefly extends Node<S> {
  override async prep(): Promise<Message | undefined> {
    try {
      return await this.receive('nobody-sends-here', { timeoutMs: 1 });
    } finally {
      clock.advance(5); // by the time the park's wake is added, its deadline has passed
    }
  }
  override post(shared: S, message: Message | undefined): void {
    shared.got = message?.body ?? null;
  }
}
const briefly = defineFlow('waits-briefly', () => new Flow(new WaitsBriefly({ name: 'waits' })));

describe('a receive whose deadline passes before its park commits', () => {
  it('times out and completes (LocalEngine)', async () => {
    clock = new FakeClock({ autoAdvance: true });
    const engine = new LocalEngine({ flows: [briefly], clock });
    try {
      const result = await (await engine.start(briefly, {} as S)).result({ timeoutMs: 30_000 });
      expect(result).toMatchObject({ status: 'completed', shared: { got: null } });
    } finally {
      await engine.close();
    }
  });
});
